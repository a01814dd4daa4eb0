"""The error boundary of the Python API: a call that is wrong as a whole raises `UsageError`
(a ValueError) or `TypeError` naming the problem; only a bad message raises `DecodeError`.
Nothing here may crash the process or quietly give an empty result."""

from __future__ import annotations

import pyarrow as pa
import pytest

import ticdc_rs
from ticdc_rs import DecodeError, UsageError

CANAL_INSERT = (
    b'{"id":0,"database":"shop","table":"t","pkNames":["id"],"isDdl":false,"type":"INSERT",'
    b'"es":1,"ts":1,"sql":"","sqlType":{"id":4},"mysqlType":{"id":"int"},"old":null,'
    b'"data":[{"id":"1"}],"_tidb":{"commitTs":449543017000000100}}'
)


def messages(values=(CANAL_INSERT,), **extra) -> pa.RecordBatch:
    return pa.record_batch({"value": pa.array(list(values), pa.binary()), **extra})


def test_usage_error_is_a_value_error_and_not_a_decode_error():
    assert issubclass(UsageError, ValueError)
    assert not issubclass(UsageError, DecodeError)
    assert not issubclass(DecodeError, UsageError)
    assert "UsageError" in ticdc_rs.__all__


@pytest.mark.parametrize(
    "kwargs, says",
    [
        ({"protocol": "avro"}, "unknown protocol 'avro'"),
        ({"protocol": "open", "layout": "wide"}, "unknown layout"),
        ({"protocol": "open", "on_error": "ignore"}, "unknown on_error"),
        ({"protocol": "open", "compression": "zstd"}, "unknown compression"),
        ({"protocol": "open", "timezone": "Mars/Olympus"}, "unknown time zone"),
        ({"protocol": "open", "layout": "typed"}, "needs table= and schema="),
        ({"protocol": "open", "layout": "typed", "table": "no_dot", "schema": "create table t (a int)"}, "db.table"),
        ({"protocol": "open", "carry": ["nope"]}, "carry column 'nope'"),
    ],
)
def test_decoder_options(kwargs, says):
    protocol = kwargs.pop("protocol")
    with pytest.raises(UsageError, match=says) as info:
        ticdc_rs.Decoder(protocol, **kwargs)
    assert "message 0 at byte 0" not in str(info.value)


def test_decoder_unknown_option_name_and_wrong_types():
    with pytest.raises(TypeError, match="colour"):
        ticdc_rs.Decoder("open", colour="red")
    with pytest.raises(TypeError, match="protocol must be a str"):
        ticdc_rs.Decoder(5)
    with pytest.raises(TypeError, match="table= must be a str"):
        ticdc_rs.Decoder("open", table=("shop", "t"))
    with pytest.raises(TypeError):
        ticdc_rs.Decoder("open", layout=1)
    with pytest.raises(TypeError, match="carry="):
        ticdc_rs.Decoder("open", carry=[3])


@pytest.mark.parametrize(
    "kwargs, says",
    [
        ({"colour": "red"}, "unknown encoder option"),
        ({"output_old_value": "maybe"}, "expected true or false"),
        ({"max_message_bytes": "big"}, "expected a size"),
        ({"compression": "zstd"}, "unknown compression"),
        ({"timezone": "Mars/Olympus"}, "unknown time zone"),
    ],
)
def test_encoder_options(kwargs, says):
    with pytest.raises(UsageError, match=says):
        ticdc_rs.Encoder("open", **kwargs)


def test_encoder_unknown_protocol():
    with pytest.raises(UsageError, match="unknown protocol"):
        ticdc_rs.Encoder("auto")
    with pytest.raises(TypeError):
        ticdc_rs.Encoder(None)


def test_encoder_input_without_event_columns():
    with pytest.raises(UsageError, match="_op"):
        ticdc_rs.Encoder("canal-json").encode(pa.record_batch({"x": [1]}))


@pytest.mark.parametrize(
    "kwargs, says",
    [
        ({"protocol": "avro", "table": "shop.t"}, "unknown protocol"),
        ({"protocol": "canal-json", "table": "shop"}, "db.table"),
        ({"protocol": "canal-json"}, "needs table="),
        ({"protocol": "canal-json", "table": "shop.t", "compression": "zstd"}, "unknown compression"),
        ({"protocol": "canal-json", "table": "shop.t", "table_schemas": ["{"]}, "table_schemas"),
    ],
)
def test_infer_schema_options(kwargs, says):
    with pytest.raises(UsageError, match=says):
        ticdc_rs.infer_schema([messages()], **kwargs)


def test_infer_schema_bad_input():
    with pytest.raises(UsageError, match="no binary \"value\" column"):
        ticdc_rs.infer_schema([pa.record_batch({"value": [1, 2]})], "canal-json", "shop.t")
    with pytest.raises(TypeError, match="not int"):
        ticdc_rs.infer_schema(42, "canal-json", "shop.t")
    with pytest.raises(TypeError, match="item 0"):
        ticdc_rs.infer_schema(["not a batch"], "canal-json", "shop.t")


def test_value_column_of_the_wrong_type():
    dec = ticdc_rs.Decoder("canal-json")
    with pytest.raises(UsageError, match='column "value" must be binary or string, not Int64'):
        dec.decode(pa.record_batch({"value": pa.array([1, 2], pa.int64())}))


def test_missing_value_column():
    with pytest.raises(UsageError, match='no "value" column'):
        ticdc_rs.Decoder("canal-json").decode(pa.record_batch({"payload": pa.array([CANAL_INSERT])}))
    with pytest.raises(UsageError, match='no "body" column'):
        ticdc_rs.Decoder("canal-json", value_column="body").decode(messages())


def test_missing_key_column_for_open():
    with pytest.raises(UsageError, match='no "key" column'):
        ticdc_rs.Decoder("open").decode(messages([b"\x00" * 8]))
    # Protocols without keys, and detection per message, do not need one.
    assert ticdc_rs.Decoder("canal-json").decode(messages()).num_rows == 1


def test_key_column_of_the_wrong_type():
    with pytest.raises(UsageError, match='column "key" must be binary or string'):
        ticdc_rs.Decoder("open").decode(messages([b"x"], key=pa.array([1.5])))


def test_a_bad_message_is_still_a_decode_error():
    with pytest.raises(DecodeError) as info:
        ticdc_rs.Decoder("canal-json").decode(messages([CANAL_INSERT, b"{"]))
    assert (info.value.protocol, info.value.message_index) == ("canal-json", 1)
    assert not isinstance(info.value, UsageError)


def test_schema_that_does_not_parse():
    with pytest.raises(UsageError, match="CREATE TABLE"):
        ticdc_rs.Decoder("canal-json", layout="typed", table="shop.t", schema="create tabel t (a int)")
    with pytest.raises(UsageError, match="table schema"):
        ticdc_rs.Decoder("simple-json", layout="typed", table="shop.t", schema="{not json")
    with pytest.raises(TypeError, match="schema= takes"):
        ticdc_rs.Decoder("canal-json", layout="typed", table="shop.t", schema=42)
    with pytest.raises(TypeError, match="schema= takes"):
        ticdc_rs.Decoder("canal-json", layout="typed", table="shop.t", schema=["id", "int"])


def test_schema_from_ddl_and_table_schema_raise_usage_errors():
    with pytest.raises(UsageError):
        ticdc_rs.schema_from_ddl("select 1")
    with pytest.raises(UsageError):
        ticdc_rs.schema_from_table_schema("[]")


def test_carry_naming_no_input_column():
    dec = ticdc_rs.Decoder("canal-json", carry=["partition"])
    with pytest.raises(UsageError, match='no carry column "partition"'):
        dec.decode(messages())
    dec = ticdc_rs.Decoder("canal-json", carry=[pa.field("region", pa.string())])
    with pytest.raises(UsageError, match="region"):
        dec.decode(messages())
    # A carried column that cannot become the declared type.
    dec = ticdc_rs.Decoder("canal-json", carry=[pa.field("when", pa.date32())])
    with pytest.raises(UsageError, match="carry column \"when\""):
        dec.decode(messages(when=pa.array([b"x"], pa.binary())))


def test_decode_refuses_a_closed_or_exhausted_generator():
    def batches():
        yield messages()

    closed = batches()
    closed.close()
    with pytest.raises(UsageError, match="closed or exhausted"):
        ticdc_rs.decode(closed)

    exhausted = batches()
    assert [b.num_rows for b in ticdc_rs.decode(exhausted)] == [1]
    with pytest.raises(UsageError, match="closed or exhausted"):
        ticdc_rs.decode(exhausted)
    with pytest.raises(UsageError, match="closed or exhausted"):
        ticdc_rs.Decoder("canal-json")(exhausted)


def test_decode_of_an_empty_iterator_is_empty():
    # Spark hands an empty partition's function an empty iterator: no output, no error.
    assert list(ticdc_rs.decode(iter([]))) == []
    assert list(ticdc_rs.Decoder("canal-json")([])) == []


def test_decode_takes_an_iterator_of_batches():
    with pytest.raises(TypeError, match="not one RecordBatch"):
        ticdc_rs.decode(messages())
    with pytest.raises(TypeError, match="not one Table"):
        ticdc_rs.decode(pa.table({"value": pa.array([CANAL_INSERT])}))
    with pytest.raises(TypeError, match="not int"):
        ticdc_rs.decode(42)
    with pytest.raises(TypeError, match="not NoneType"):
        ticdc_rs.decode(None)


@pytest.mark.parametrize("item", ["not a batch", 42, None, {"value": [b"x"]}])
def test_non_batch_in_the_iterator(item):
    out = ticdc_rs.decode([messages(), item])
    assert next(out).num_rows == 1
    with pytest.raises(TypeError, match="item 1 of the iterator must be a pyarrow.RecordBatch"):
        next(out)


def test_decoder_decode_of_a_non_batch():
    with pytest.raises(TypeError, match="the batch to decode must be a pyarrow.RecordBatch"):
        ticdc_rs.Decoder("canal-json").decode("value")
    with pytest.raises(TypeError, match="the batch to encode must be a pyarrow.RecordBatch"):
        ticdc_rs.Encoder("canal-json").encode([1, 2])
    # A table is one batch.
    table = pa.table({"value": pa.array([CANAL_INSERT, CANAL_INSERT], pa.binary())})
    assert ticdc_rs.Decoder("canal-json").decode(table).num_rows == 2


def test_an_array_is_not_a_batch():
    # pa.Array has __arrow_c_array__ too; Arrow says it is no struct/record batch.
    with pytest.raises((TypeError, ValueError)) as info:
        ticdc_rs.Decoder("canal-json").decode(pa.array([CANAL_INSERT]))
    assert not isinstance(info.value, DecodeError)


def test_encoder_call_refuses_what_decode_refuses():
    with pytest.raises(TypeError, match="not one RecordBatch"):
        ticdc_rs.Encoder("canal-json")(messages())
