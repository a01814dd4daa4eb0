//! Table definitions from DDL: CREATE TABLE variety, ALTER sequences, the vectors' own table
//! definitions, and typed decoding with a schema from DDL (declared, or followed in the stream).

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Int16Type, Int32Type, Int64Type, Int8Type};
use arrow_array::{Array, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use proptest::prelude::*;
use serde_json::Value as Json;
use ticdc_rs::arrow::infer::infer_schema;
use ticdc_rs::schema::ddl::{apply_ddl, parse_create_table, parse_ddl_script};
use ticdc_rs::schema::mysql::MySqlType;
use ticdc_rs::schema::table::TableDefinition;
use ticdc_rs::TableName;
use ticdc_rs::{BatchDecoder, Compression, DecodeOptions, LayoutOptions, OnError, Protocol};

fn types(def: &TableDefinition) -> Vec<(&str, &str, bool)> {
    def.columns.iter().map(|c| (c.name.as_str(), c.type_text.as_str(), c.nullable)).collect()
}

const TIDB_SHOW_CREATE: &str = r#"CREATE TABLE IF NOT EXISTS `shop`.`orders` (
  `id` bigint(20) NOT NULL /*T![auto_rand] AUTO_RANDOM(5) */,
  `price` DECIMAL(10, 2) UNSIGNED DEFAULT '0.00' COMMENT 'price, in ''cents''',
  `amount` decimal NOT NULL,
  `state` enum('new','paid','it''s done','a,b') CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT 'new',
  `tags` set('x','y') DEFAULT NULL,
  `qty` int(10) unsigned zerofill NOT NULL,
  `small` smallint ZEROFILL,
  `created` timestamp(3) NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  `updated` datetime(6) DEFAULT NULL,
  `dur` time(3),
  `flags` bit(10) DEFAULT b'0',
  `wide` BIT(64),
  `v` vector,
  `v3` VECTOR(3),
  `vf` vector<float>(4),
  `raw` varbinary(16),
  `rawc` char(8) CHARSET binary,
  `doc` json,
  `body` longtext CHARACTER SET utf8mb4,
  `pic` mediumblob,
  `ok` boolean NOT NULL DEFAULT TRUE,
  `yr` year(4),
  `f` float(10,3),
  `d` double precision,
  `shape` point,
  PRIMARY KEY (`id`) /*T![clustered_index] CLUSTERED */,
  UNIQUE KEY `uk_qty` (`qty`),
  KEY `idx_state` (`state`, `created`) COMMENT 'lookup',
  FULLTEXT KEY `ft` (`body`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='orders' /*T![auto_rand_base] AUTO_RANDOM_BASE=39456621 */
PARTITION BY RANGE (`id`) (PARTITION `p0` VALUES LESS THAN (100), PARTITION `p1` VALUES LESS THAN (MAXVALUE))"#;

#[test]
fn tidb_show_create_table() {
    let def = parse_create_table(TIDB_SHOW_CREATE).unwrap();
    assert_eq!((def.schema.as_str(), def.table.as_str()), ("shop", "orders"));
    assert_eq!(def.primary_key, ["id"]);
    assert_eq!(
        types(&def),
        [
            ("id", "bigint(20)", false),
            ("price", "decimal(10,2) unsigned", true),
            ("amount", "decimal(10,0)", false),
            ("state", "enum('new','paid','it''s done','a,b')", true),
            ("tags", "set('x','y')", true),
            ("qty", "int(10) unsigned zerofill", false),
            ("small", "smallint unsigned zerofill", true),
            ("created", "timestamp(3)", true),
            ("updated", "datetime(6)", true),
            ("dur", "time(3)", true),
            ("flags", "bit(10)", true),
            ("wide", "bit(64)", true),
            ("v", "vector", true),
            ("v3", "vector(3)", true),
            ("vf", "vector(4)", true),
            ("raw", "varbinary(16)", true),
            ("rawc", "binary(8)", true),
            ("doc", "json", true),
            ("body", "longtext", true),
            ("pic", "mediumblob", true),
            ("ok", "tinyint(1)", false),
            ("yr", "year(4)", true),
            ("f", "float(10,3)", true),
            ("d", "double", true),
            ("shape", "geometry", true),
        ]
    );
    let state = &def.columns[3].ty;
    assert_eq!(state.base, MySqlType::Enum);
    assert_eq!(state.members, ["new", "paid", "it's done", "a,b"]);
    assert!(def.columns[5].ty.unsigned && def.columns[1].ty.unsigned);
    assert!(def.columns[16].ty.binary);

    let schema = def.arrow_schema();
    let ty = |name: &str| schema.field_with_name(name).unwrap().data_type().clone();
    assert_eq!(ty("price"), DataType::Decimal128(10, 2));
    assert_eq!(ty("amount"), DataType::Decimal128(10, 0));
    assert_eq!(ty("flags"), DataType::Int64);
    assert_eq!(ty("wide"), DataType::Decimal128(20, 0));
    assert_eq!(ty("created"), DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())));
    assert_eq!(ty("updated"), DataType::Timestamp(TimeUnit::Microsecond, None));
    assert_eq!(ty("v3"), DataType::new_list(DataType::Float32, true));
    assert_eq!(ty("raw"), DataType::Binary);
    assert_eq!(ty("rawc"), DataType::Binary);
    assert_eq!(ty("qty"), DataType::Int64);
    assert_eq!(ty("ok"), DataType::Int8);
    assert_eq!(schema.metadata()["primary_key"], r#"["id"]"#);
    assert_eq!(
        schema.field_with_name("state").unwrap().metadata()["mysql_type"],
        "enum('new','paid','it''s done','a,b')"
    );
}

/// MySQL spellings that Canal passes through from the user's own DDL.
#[test]
fn mysql_only_type_spellings() {
    let def = parse_create_table(
        "create table t (id serial, a BIT, b long varchar, c LONG, d long varbinary, e national varchar(10), \
         f national char(2), g fixed(8,2), h middleint, national int)",
    )
    .unwrap();
    assert_eq!(
        types(&def),
        [
            ("id", "bigint unsigned", false),
            ("a", "bit(1)", true),
            ("b", "mediumtext", true),
            ("c", "mediumtext", true),
            ("d", "mediumblob", true),
            ("e", "varchar(10)", true),
            ("f", "char(2)", true),
            ("g", "decimal(8,2)", true),
            ("h", "mediumint", true),
            ("national", "int", true),
        ]
    );
    let schema = def.arrow_schema();
    let ty = |name: &str| schema.field_with_name(name).unwrap().data_type().clone();
    assert_eq!(ty("a"), DataType::Int64, "a bare BIT is BIT(1)");
    assert_eq!(ty("d"), DataType::Binary);
    assert_eq!(ty("g"), DataType::Decimal128(8, 2));
    assert_eq!(def.primary_key, ["id"], "SERIAL is NOT NULL UNIQUE, so the handle when no primary key is declared");
}

#[test]
fn primary_keys() {
    let pk = |sql: &str| parse_create_table(sql).unwrap().primary_key;
    assert_eq!(pk("create table t (a int primary key, b int)"), ["a"]);
    assert_eq!(pk("create table t (a int, b int, primary key (b, a))"), ["b", "a"]);
    assert_eq!(pk("create table t (a int, B int, constraint pk primary key (b))"), ["B"]);
    // No primary key: the first unique key over NOT NULL columns is the handle, as in TiDB.
    assert_eq!(pk("create table t (a int unique, b int not null, c int not null, unique key (b, c))"), ["b", "c"]);
    assert_eq!(pk("create table t (a int not null unique, b int)"), ["a"]);
    assert!(pk("create table t (a int, b int, unique (a))").is_empty());
    assert_eq!(pk("create table t (id varchar(10), primary key (id(4)))"), ["id"]);
    assert_eq!(pk("create table t (id bigint auto_random primary key clustered, v int)"), ["id"]);
    assert_eq!(pk("create table t (id bigint, primary key (id) nonclustered)"), ["id"]);
    let def = parse_create_table("create table t (id int, primary key (id))").unwrap();
    assert!(!def.columns[0].nullable, "key columns are NOT NULL");
}

#[test]
fn names_and_odd_spellings() {
    let def =
        parse_create_table("CREATE TABLE `my db`.`my``table` (`select` INT, `key` varchar(3), `int` int)").unwrap();
    assert_eq!((def.schema.as_str(), def.table.as_str()), ("my db", "my`table"));
    assert_eq!(types(&def), [("select", "int", true), ("key", "varchar(3)", true), ("int", "int", true)]);
    let def = parse_create_table("create temporary table t (a integer, b numeric(5), c real, d nvarchar(4), e int8)")
        .unwrap();
    assert_eq!(def.schema, "");
    assert_eq!(
        types(&def).iter().map(|t| t.1).collect::<Vec<_>>(),
        ["int", "decimal(5,0)", "double", "varchar(4)", "bigint"]
    );
    // Unusual defaults fall back to name, type and nullability.
    let def =
        parse_create_table("create table t (a varchar(4) not null default _utf8mb4'x' comment 'c', b int)").unwrap();
    assert_eq!(types(&def), [("a", "varchar(4)", false), ("b", "int", true)]);
}

#[test]
fn not_create_table_is_an_error() {
    for sql in [
        "create table t like u",
        "create table t as select 1",
        "create database d",
        "drop table t",
        "",
        "create table",
        "create table t (",
        "create table t ()",
        "create table t (a nosuchtype(()",
    ] {
        assert!(parse_create_table(sql).is_err(), "{sql}");
    }
}

#[test]
fn alter_sequences() {
    let mut def = parse_create_table("create table test.t (id int primary key, a int, b varchar(10))").unwrap();
    let steps = [
        ("alter table test.t add column c decimal(12,4) not null after a", true),
        ("ALTER TABLE `t` ADD `d` enum('x','y') FIRST", true),
        ("alter table t drop column b", true),
        ("alter table t modify column a bigint unsigned", true),
        ("alter table t change c cc decimal(14,4)", true),
        ("alter table t rename column cc to c2", true),
        ("alter table other.t add column z int", false),
        ("alter table u add column z int", false),
        ("alter table t add column (e json, f bit(3))", true),
        ("truncate table test.t", true),
        ("truncate table u", false),
        ("create index i on t (a)", true),
        ("drop index i on t", true),
        ("alter table t add index ia (a), alter column a set default 1", true),
        ("create database x", false),
    ];
    for (sql, concerns) in steps {
        assert_eq!(apply_ddl(&mut def, sql), Ok(concerns), "{sql}");
    }
    assert_eq!(
        types(&def),
        [
            ("d", "enum('x','y')", true),
            ("id", "int", false),
            ("a", "bigint unsigned", true),
            ("c2", "decimal(14,4)", true),
            ("e", "json", true),
            ("f", "bit(3)", true),
        ]
    );
    assert_eq!(def.primary_key, ["id"]);

    assert_eq!(apply_ddl(&mut def, "alter table t change id uid bigint not null"), Ok(true));
    assert_eq!(def.primary_key, ["uid"]);
    assert_eq!(apply_ddl(&mut def, "alter table t drop primary key, add primary key (uid, a)"), Ok(true));
    assert_eq!(def.primary_key, ["uid", "a"]);
    assert_eq!(apply_ddl(&mut def, "rename table test.t to test.t2, a.b to a.c"), Ok(true));
    assert_eq!(def.table, "t2");
    assert_eq!(apply_ddl(&mut def, "alter table test.t2 rename to archive.t3"), Ok(true));
    assert_eq!((def.schema.as_str(), def.table.as_str()), ("archive", "t3"));
    // A CREATE TABLE of the same table replaces the definition.
    assert_eq!(apply_ddl(&mut def, "create table t3 (k int)"), Ok(true));
    assert_eq!((def.schema.as_str(), types(&def)), ("archive", vec![("k", "int", true)]));
    // Errors leave a readable message and no panic.
    assert!(apply_ddl(&mut def, "alter table t3 drop column nope").is_err());
    assert!(apply_ddl(&mut def, "alter table t3 add column k int").is_err());
    assert!(apply_ddl(&mut def, "alter table t3 add column x int after nope").is_err());
}

mod common;

/// The protocol directories of the vectors: the shared golden set, else the project's fixtures.
fn vector_dirs() -> Vec<PathBuf> {
    ["open", "craft", "canal-json", "simple"].iter().map(|p| common::vector_dir(p).0).collect()
}

fn read_json(path: &std::path::Path) -> Json {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every CREATE TABLE in the vectors parses; where the vector also gives TiDB's table schema
/// (simple), the columns, types, nullability and key agree with it.
#[test]
fn vector_table_definitions() {
    let mut checked = 0;
    for dir in vector_dirs() {
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let vector = read_json(&path);
            for event in vector["expected"].as_array().into_iter().flatten() {
                let Some(query) = event["query"].as_str() else { continue };
                // (The spec documents also show bodiless `create table a` and elided `(...)` examples.)
                if !query.to_ascii_lowercase().starts_with("create table")
                    || query.contains("...")
                    || !query.contains('(')
                {
                    continue;
                }
                let query = query.trim_end_matches(';');
                let def = parse_create_table(query).unwrap_or_else(|e| panic!("{}: {query}: {e}", path.display()));
                checked += 1;
                let Some(ts) = event["table_schema"].as_object() else { continue };
                let columns = ts["columns"].as_array().unwrap();
                assert_eq!(def.columns.len(), columns.len(), "{}", path.display());
                for (ours, theirs) in def.columns.iter().zip(columns) {
                    assert_eq!(ours.name, theirs["name"].as_str().unwrap());
                    let (base, _) = MySqlType::from_name(theirs["mysql_type"].as_str().unwrap());
                    assert_eq!(ours.ty.base, base, "{}: {}", path.display(), ours.name);
                    assert_eq!(ours.ty.unsigned, theirs["unsigned"].as_bool().unwrap(), "{}", ours.name);
                    assert_eq!(ours.nullable, theirs["nullable"].as_bool().unwrap(), "{}", ours.name);
                    if let Some(elements) = theirs["elements"].as_array() {
                        let elements: Vec<&str> = elements.iter().map(|e| e.as_str().unwrap()).collect();
                        assert_eq!(ours.ty.members, elements);
                    }
                }
                let primary = ts["indexes"].as_array().unwrap().iter().find(|i| i["primary"] == true);
                let expected_pk: Vec<&str> = primary
                    .map(|i| i["columns"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect())
                    .unwrap_or_default();
                assert_eq!(def.primary_key, expected_pk, "{}", path.display());
            }
        }
    }
    assert!(checked >= 5, "only {checked} CREATE TABLE statements found");
}

fn batch(values: Vec<Vec<u8>>) -> RecordBatch {
    let schema = Schema::new(vec![Field::new("value", DataType::Binary, true)]);
    RecordBatch::try_new(Arc::new(schema), vec![Arc::new(BinaryArray::from_iter_values(values.iter()))]).unwrap()
}

fn typed_decoder(schema: &Schema) -> BatchDecoder {
    let table = TableName::parse(schema.metadata().get("table").map_or("test.t", |s| s.as_str())).unwrap();
    BatchDecoder::new(DecodeOptions {
        protocol: Some(Protocol::CanalJson),
        on_error: OnError::Raise,
        layout: LayoutOptions::Typed { table, schema: Arc::new(schema.clone()) },
        ..Default::default()
    })
    .unwrap()
}

fn canal_vector(name: &str) -> Option<Vec<Vec<u8>>> {
    let path = common::vector_dir("canal-json").0.join(name);
    if !path.is_file() {
        eprintln!("{} is absent: skipping", path.display());
        return None;
    }
    let vector = read_json(&path);
    Some(
        vector["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| hex::decode(m["value_hex"].as_str().unwrap()).unwrap())
            .collect(),
    )
}

const OTHER_TYPES: &str = "create table test.t (id int primary key, a bool, b bool, c year, d bit(10), e json, \
    f decimal(10,2), g enum('a','b','c'), h set('a','b','c'))";

#[test]
fn typed_with_schema_from_ddl_reads_exact_values() {
    let Some(messages) = canal_vector("dml_other_types.json") else { return };
    let schema = parse_create_table(OTHER_TYPES).unwrap().arrow_schema();
    let mut decoder = typed_decoder(&schema);
    let out = decoder.decode(&batch(messages)).unwrap();
    assert_eq!(out.num_rows(), 1);
    let col = |name: &str| out.column_by_name(name).unwrap().clone();
    assert_eq!(col("id").as_primitive::<Int32Type>().value(0), 1);
    assert_eq!(col("a").as_primitive::<Int8Type>().value(0), 1);
    assert_eq!(col("c").as_primitive::<Int16Type>().value(0), 2000);
    assert_eq!(col("d").as_primitive::<Int64Type>().value(0), 341);
    let f = col("f");
    assert_eq!(f.data_type(), &DataType::Decimal128(10, 2));
    assert_eq!(f.as_primitive::<Decimal128Type>().value(0), 15312);
    assert_eq!(col("g").as_string::<i32>().value(0), "a");
    assert_eq!(col("h").as_string::<i32>().value(0), "a,b");
    assert_eq!(col("e").as_string::<i32>().value(0), r#"{"key1": "value1"}"#);
    let stats: std::collections::HashMap<_, _> = decoder.stats().into_iter().collect();
    assert_eq!(stats["dropped_columns"], 0);
}

#[test]
fn undeclared_columns_are_dropped_and_missing_ones_null() {
    let Some(messages) = canal_vector("dml_other_types.json") else { return };
    // The declared table lacks e..h and has a column the messages never carry.
    let schema = parse_create_table(
        "create table test.t (id int primary key, a bool, b bool, c year, d bit(10), extra varchar(5))",
    )
    .unwrap()
    .arrow_schema();
    let mut decoder = typed_decoder(&schema);
    let out = decoder.decode(&batch(messages)).unwrap();
    assert_eq!(out.num_rows(), 1);
    assert!(out.column_by_name("f").is_none());
    assert!(out.column_by_name("extra").unwrap().is_null(0));
    let stats: std::collections::HashMap<_, _> = decoder.stats().into_iter().collect();
    assert_eq!(stats["dropped_columns"], 4);
}

#[test]
fn all_types_row_decodes_with_a_ddl_schema() {
    let Some(messages) = canal_vector("dml_large_insert.json") else { return };
    let ddl = "create table test.t (t tinyint, tu1 tinyint unsigned primary key, tu2 tinyint unsigned, tu3 tinyint unsigned, \
        tu4 tinyint unsigned, s smallint, su1 smallint unsigned, su2 smallint unsigned, su3 smallint unsigned, su4 smallint unsigned, \
        m mediumint, mu1 mediumint unsigned, mu2 mediumint unsigned, mu3 mediumint unsigned, mu4 mediumint unsigned, \
        i int, iu1 int unsigned, iu2 int unsigned, iu3 int unsigned, iu4 int unsigned, \
        bi bigint, biu1 bigint unsigned, biu2 bigint unsigned, biu3 bigint unsigned, biu4 bigint unsigned, \
        floatT float, doubleT double, decimalT decimal(12,6), floatTu float unsigned, doubleTu double unsigned, \
        decimalTu decimal(12,6) unsigned, decimalTu2 decimal(5,4) unsigned, varcharT varchar(255), charT char(255), \
        binaryT binary(255), varbinaryT varbinary(255), tinytextT tinytext, textT text, mediumtextT mediumtext, longtextT longtext, \
        tinyblobT tinyblob, blobT blob, mediumblobT mediumblob, longblobT longblob, dateT date, datetimeT datetime, \
        timestampT timestamp, timestampT2 timestamp(6), timeT time, yearT year, enumT enum('a','b','c'), setT set('a','b','c'), \
        bitT bit(10), vectorT vector(5), jsonT json)";
    let def = parse_create_table(ddl).unwrap();
    let mut decoder = typed_decoder(&def.arrow_schema());
    let out = decoder.decode(&batch(messages)).unwrap();
    assert_eq!(out.num_rows(), 1);
    let col = |name: &str| out.column_by_name(name).unwrap().clone();
    assert_eq!(col("decimalT").as_primitive::<Decimal128Type>().value(0), 2333654321);
    assert_eq!(col("decimalTu2").as_primitive::<Decimal128Type>().value(0), 17371);
    assert_eq!(col("biu2").as_primitive::<Decimal128Type>().value(0), 9223372036854775808);
    assert_eq!(col("enumT").as_string::<i32>().value(0), "a");
    assert_eq!(col("setT").as_string::<i32>().value(0), "b");
    assert_eq!(col("bitT").as_primitive::<Int64Type>().value(0), 65);
    assert_eq!(&col("binaryT").as_binary::<i32>().value(0)[..6], "测试".as_bytes());
    assert!(col("tu4").is_null(0));
}

fn ddl_message(sql: &str) -> Vec<u8> {
    let sql = serde_json::to_string(sql).unwrap();
    format!(r#"{{"id":0,"database":"test","table":"t","pkNames":null,"isDdl":true,"type":"ALTER","es":1,"ts":1,"sql":{sql},"sqlType":null,"mysqlType":null,"data":null,"old":null,"_tidb":{{"commitTs":5}}}}"#).into_bytes()
}

fn row_message(g: &str, extra: &str) -> Vec<u8> {
    format!(r#"{{"id":0,"database":"test","table":"t","pkNames":["id"],"isDdl":false,"type":"INSERT","es":1,"ts":1,"sql":"","sqlType":null,"mysqlType":{{"id":"int","g":"enum","f":"decimal"{extra}}},"old":null,"data":[{{"id":"1","g":"{g}","f":"1.5"}}],"_tidb":{{"commitTs":6}}}}"#).into_bytes()
}

#[test]
fn typed_layout_follows_ddl_in_the_stream() {
    let schema = parse_create_table("create table test.t (id int primary key, g enum('a','b'), f decimal(10,2))")
        .unwrap()
        .arrow_schema();
    let mut decoder = typed_decoder(&schema);
    let messages = vec![
        row_message("2", ""),
        ddl_message("alter table t modify g enum('x','y','z')"),
        row_message("2", ""),
        ddl_message("alter table t modify g varchar(10)"),
        row_message("7", ""),
        ddl_message("alter table t add column later int"),
    ];
    let out = decoder.decode(&batch(messages)).unwrap();
    let ops = out.column_by_name("_op").unwrap().as_string::<i32>();
    assert_eq!(
        (0..ops.len()).map(|i| ops.value(i)).collect::<Vec<_>>(),
        ["INSERT", "DDL", "INSERT", "DDL", "INSERT", "DDL"]
    );
    let g = out.column_by_name("g").unwrap().as_string::<i32>();
    assert_eq!((g.value(0), g.value(2), g.value(4)), ("b", "y", "7"));
    let f = out.column_by_name("f").unwrap().as_primitive::<Decimal128Type>();
    assert_eq!(f.value(0), 150);
    // The output schema stays as declared.
    assert!(out.column_by_name("later").is_none());
}

#[test]
fn typed_layout_follows_a_rename_reported_under_the_new_name() {
    let schema = parse_create_table("create table test.t (id int primary key, g enum('a','b'), f decimal(10,2))")
        .unwrap()
        .arrow_schema();
    let mut decoder = typed_decoder(&schema);
    let renamed = |m: Vec<u8>| String::from_utf8(m).unwrap().replace(r#""table":"t""#, r#""table":"t2""#).into_bytes();
    let messages = vec![
        row_message("1", ""),
        renamed(ddl_message("rename table t to t2")),
        renamed(row_message("2", "")),
        row_message("1", ""), // a new table named t: not ours any more
    ];
    let out = decoder.decode(&batch(messages)).unwrap();
    let ops = out.column_by_name("_op").unwrap().as_string::<i32>();
    assert_eq!((0..ops.len()).map(|i| ops.value(i)).collect::<Vec<_>>(), ["INSERT", "DDL", "INSERT"]);
    let tables = out.column_by_name("_table").unwrap().as_string::<i32>();
    assert_eq!((tables.value(0), tables.value(2)), ("t", "t2"));
    let g = out.column_by_name("g").unwrap().as_string::<i32>();
    assert_eq!(g.value(2), "b");
}

#[test]
fn typed_layout_learns_members_from_a_create_table_in_the_stream() {
    // Declared without type texts: ENUM values stay numbers until the CREATE TABLE arrives.
    let schema = Schema::new(vec![Field::new("id", DataType::Int32, true), Field::new("g", DataType::Utf8, true)])
        .with_metadata([("table".to_string(), "test.t".to_string())].into());
    let mut decoder = typed_decoder(&schema);
    let messages = vec![
        row_message("1", ""),
        ddl_message("create table t (id int primary key, g enum('p','q'))"),
        row_message("1", ""),
    ];
    let out = decoder.decode(&batch(messages)).unwrap();
    let g = out.column_by_name("g").unwrap().as_string::<i32>();
    assert_eq!((g.value(0), g.value(2)), ("1", "p"));
}

#[test]
fn inference_prefers_create_table() {
    let create = "create table test.t (id int primary key, g enum('a','b'), f decimal(10,2), gone int)";
    let messages = vec![
        row_message("1", ""),
        ddl_message(create),
        ddl_message("alter table t drop column gone, add column h bit(5)"),
        row_message("1", ""),
    ];
    let table = TableName::parse("test.t").unwrap();
    let schema = infer_schema(
        &[batch(messages.clone())],
        Some(Protocol::CanalJson),
        &table,
        Compression::None,
        "value",
        "key",
        &[],
    )
    .unwrap();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["id", "g", "f", "h"]);
    assert_eq!(schema.field_with_name("f").unwrap().data_type(), &DataType::Decimal128(10, 2));
    assert_eq!(schema.field_with_name("h").unwrap().data_type(), &DataType::Int64);
    assert_eq!(schema.metadata()["primary_key"], r#"["id"]"#);
    let out = typed_decoder(&schema).decode(&batch(messages)).unwrap();
    let g = out.column_by_name("g").unwrap().as_string::<i32>();
    assert_eq!(g.value(0), "a");

    // Without a CREATE TABLE the rows are read as before.
    let schema = infer_schema(
        &[batch(vec![row_message("1", "")])],
        Some(Protocol::CanalJson),
        &table,
        Compression::None,
        "value",
        "key",
        &[],
    )
    .unwrap();
    assert_eq!(schema.field_with_name("f").unwrap().data_type(), &DataType::Decimal128(38, 1));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_ddl_never_panics(sql in "(create table|alter table|rename table|CREATE TABLE `a`.`b` \\(|[a-z(),` '0-9]){0,30}") {
        let _ = parse_create_table(&sql);
        let mut def = parse_create_table("create table a.b (x int)").unwrap();
        let _ = apply_ddl(&mut def, &sql);
    }

    #[test]
    fn mutated_create_table_never_panics(at in 0usize..2000, byte in 0u8..128, cut in 0usize..2000) {
        let mut sql = TIDB_SHOW_CREATE.as_bytes().to_vec();
        let at = at % sql.len();
        sql[at] = byte;
        sql.truncate(sql.len() - cut % sql.len());
        let sql = String::from_utf8_lossy(&sql);
        let _ = parse_create_table(&sql);
    }
}

#[test]
fn a_ddl_script_gives_its_table_after_every_alter() {
    let script = "-- the schema dump\nCREATE DATABASE `shop`;\nUSE shop;\n\
        CREATE TABLE `shop`.`orders` (`id` INT NOT NULL, `note` VARCHAR(10), PRIMARY KEY (`id`));\n\
        CREATE TABLE `shop`.`other` (`x` INT);\n\
        ALTER TABLE `shop`.`orders` ADD COLUMN `amount` DECIMAL(12,2) NULL, MODIFY COLUMN `note` TEXT;\n\
        ALTER TABLE `shop`.`other` ADD COLUMN `y` INT;\n\
        ALTER TABLE `shop`.`orders` ADD INDEX `idx_note` (`note`(5));";
    let def = parse_ddl_script(script).unwrap();
    assert_eq!(def.table, "orders");
    assert_eq!(types(&def), vec![("id", "int", false), ("note", "text", true), ("amount", "decimal(12,2)", true)]);
    let one = "CREATE TABLE t (`id` INT NOT NULL, PRIMARY KEY (`id`))";
    assert_eq!(parse_ddl_script(one).unwrap(), parse_create_table(one).unwrap());
    assert!(parse_ddl_script("CREATE DATABASE a; USE a;").unwrap_err().contains("no CREATE TABLE"));
    assert!(parse_ddl_script("CREATE DATABASE a; CREATE TABLE t (`id` INT").is_err());
}
