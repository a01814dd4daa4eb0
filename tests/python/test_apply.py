"""Apply, case by case, in both engines: late changes, key changes, TRUNCATE, a column added
upstream, the TSO each commit records. (The model-based tests cover random streams.)"""

from __future__ import annotations

import json
from datetime import timedelta

import polars as pl
import pytest
from deltalake import DeltaTable

import ticdc_rs.polars as tp
import ticdc_rs.spark as ts
from ticdc_rs import ReplayError

TS = 449549697944125440


def events(*rows: dict, extra: bool = False, time: bool = False) -> pl.DataFrame:
    """Typed events of `shop.items (id INT, v VARCHAR, n BIGINT[, extra VARCHAR][, opens TIME(6)])`."""
    columns = {"id": pl.Int32, "v": pl.String, "n": pl.Int64, **({"extra": pl.String} if extra else {}),
               **({"opens": pl.Duration("us")} if time else {})}
    before = pl.Struct(columns)
    schema = {"_op": pl.String, "_commit_ts": pl.Int64, "_ddl": pl.String, "_partition": pl.Int32,
              "_offset": pl.Int64, **columns, "_before": before}
    return pl.DataFrame([{"_partition": 0, **r} for r in rows], schema=schema)


def ins(t, i, v="x", n=1, **kw):
    return {"_op": "INSERT", "_commit_ts": TS + t, "id": i, "v": v, "n": n, **kw}


def upd(t, i, v, old_id=None, **kw):
    return {"_op": "UPDATE", "_commit_ts": TS + t, "id": i, "v": v, "n": 1,
            "_before": {"id": old_id if old_id is not None else i, "v": "old", "n": 1}, **kw}


def dele(t, i):
    return {"_op": "DELETE", "_commit_ts": TS + t, "id": i, "v": None, "n": None}


def mark(t, p=0):
    return {"_op": "WATERMARK", "_commit_ts": TS + t, "_partition": p}


def truncate(t):
    return {"_op": "DDL", "_commit_ts": TS + t, "_ddl": "TRUNCATE TABLE `shop`.`items`"}


@pytest.fixture(params=["polars", "spark"])
def engine(request, tmp_path):
    """apply(events) into one target, and read() of its current rows, in either engine."""
    target = str(tmp_path / "items")
    if request.param == "polars":
        def apply(frame, **kw):
            return tp.apply(frame, target, keys=["id"], **kw)
    else:
        spark = request.getfixturevalue("spark")

        def apply(frame, **kw):
            df = spark.createDataFrame(frame.to_arrow(compat_level=pl.CompatLevel.oldest()))
            return ts.apply(df, target, keys=["id"], **kw)

    def read():
        table = pl.from_arrow(DeltaTable(target).to_pyarrow_table())
        return table.filter(~pl.col("_deleted")).drop("_commit_ts", "_deleted").sort("id")

    apply.read, apply.target = read, target
    return apply


def test_a_late_older_change_is_ignored_also_after_a_delete(engine):
    engine(events(ins(1, 1, "a"), ins(1, 2, "b"), upd(5, 1, "a2"), dele(6, 2)))
    engine(events(ins(1, 2, "b"), upd(3, 1, "stale"), ins(1, 1, "a")))  # redelivered, older
    assert engine.read().rows() == [(1, "a2", 1)]


def test_an_update_that_changes_the_key_removes_the_old_key(engine):
    engine(events(ins(1, 1, "a"), ins(1, 2, "b")))
    engine(events(upd(2, 3, "moved", old_id=1)))
    assert engine.read()["id"].to_list() == [2, 3]


def test_a_key_moved_into_a_key_freed_in_the_same_transaction(engine):
    engine(events(ins(1, 1, "a"), ins(1, 2, "b")))
    # One transaction: 1 -> 5, then 2 -> 1 (split as TiCDC splits it, removal of 1 last).
    engine(events(ins(2, 1, "was 2"), dele(2, 2), ins(2, 5, "was 1"), dele(2, 1)))
    assert engine.read().select("id", "v").rows() == [(1, "was 2"), (5, "was 1")]


def test_truncate_empties_the_table_and_voids_late_changes_before_it(engine):
    engine(events(ins(1, 1), ins(1, 2)))
    engine(events(truncate(4), ins(5, 3, "after")))
    engine(events(ins(2, 9, "late, before the truncate")))
    assert engine.read()["id"].to_list() == [3]


@pytest.mark.parametrize(("ddl", "resets"), [
    ("DROP TABLE `shop`.`items`", True),
    ("drop database shop", True),
    ("/* by TiCDC */ TRUNCATE TABLE items", True),
    ("ALTER TABLE `shop`.`items` ADD COLUMN x INT", False),
    ("CREATE TABLE `shop`.`truncate` (id INT)", False),
])
def test_truncate_and_drop_empty_the_table_and_other_ddl_does_not(engine, ddl, resets):
    frame = events(ins(1, 1), {"_op": "DDL", "_commit_ts": TS + 2, "_ddl": ddl}, ins(3, 2))
    engine(frame)
    expected = [2] if resets else [1, 2]
    assert engine.read()["id"].to_list() == expected
    assert tp.replay(frame, keys=["id"])["id"].sort().to_list() == expected


def test_a_column_added_upstream_reaches_the_target(engine):
    engine(events(ins(1, 1, "a")))
    engine(events(ins(2, 2, "b", extra="new"), upd(3, 1, "a2", extra="e1"), extra=True))
    assert engine.read().rows() == [(1, "a2", 1, "e1"), (2, "b", 1, "new")]


def test_a_time_column_lands_as_its_microseconds(engine):
    """Delta has no type for MySQL TIME (-838:59:59 to 838:59:59): the target holds its int64
    microseconds, the same in both engines."""
    times = [timedelta(hours=-838, minutes=-59, seconds=-59), timedelta(hours=25, microseconds=500_000),
             timedelta(hours=-1, minutes=-2, seconds=-3, microseconds=-4), None]
    engine(events(*(ins(1, i + 1, opens=t) for i, t in enumerate(times)), time=True))
    engine(events(upd(2, 2, "b", opens=timedelta(seconds=1)), time=True))
    assert engine.read()["opens"].to_list() == [-3_020_399_000_000, 1_000_000, -3_723_000_004, None]


def test_each_commit_records_the_consistent_tso(engine):
    assert engine(events(ins(1, 1), mark(1, 0))) == TS + 1
    assert engine(events(ins(2, 2, _partition=1), mark(2, 1), mark(3, 0))) == TS + 2
    meta = json.loads(DeltaTable(engine.target).history(1)[0]["userMetadata"])["ticdc_rs"]
    assert meta["resolved_ts"] == TS + 2 and meta["watermarks"] == {"0": TS + 3, "1": TS + 2}
    # A micro-batch of watermarks alone changes no row, and still commits the new TSO.
    assert engine(events(mark(4, 1))) == TS + 3
    meta = json.loads(DeltaTable(engine.target).history(1)[0]["userMetadata"])["ticdc_rs"]
    assert meta["resolved_ts"] == TS + 3 and meta["watermarks"] == {"0": TS + 3, "1": TS + 4}


def test_replay_says_when_there_is_no_key():
    with pytest.raises(ReplayError, match="primary key"):
        tp.replay(events(ins(1, 1)))
    with pytest.raises(ReplayError, match="not columns"):
        tp.replay(events(ins(1, 1)), keys=["nope"])
    with pytest.raises(ReplayError, match="as_of"):
        tp.replay(events(ins(1, 1)), keys=["id"], as_of="now")


def test_rows_that_carry_only_the_handle_key_cannot_be_replayed():
    frame = events(ins(1, 1)).with_columns(
        pl.lit(True).alias("_handle_key_only"), pl.lit(None, pl.String).alias("_claim_check")
    )
    with pytest.raises(ReplayError, match="handle key"):
        tp.replay(frame, keys=["id"])


def test_a_truncate_closes_a_key_written_and_removed_in_one_transaction_history(engine):
    engine(events(ins(1, 1, "a"), ins(1, 2, "b")), history=True)
    # One transaction: 2 -> 1 and 1 -> 5, split, the removal of 1 after its write in the stream.
    engine(events(ins(2, 1, "was 2"), dele(2, 2), ins(2, 5, "was 1"), dele(2, 1)), history=True)
    engine(events(truncate(3)), history=True)
    table = pl.from_arrow(DeltaTable(engine.target).to_pyarrow_table())
    key_1 = table.filter(pl.col("id") == 1).sort("_valid_from")
    assert key_1.select("v", "_valid_from", "_valid_to", "_deleted").rows() == [
        ("a", TS + 1, TS + 2, False), ("was 2", TS + 2, TS + 3, False), (None, TS + 3, None, True)]
    assert table.filter(pl.col("_is_current")).is_empty()
