//! What kind of DDL an event is: TiDB's action code, or the category word that stands for it.
//!
//! Open and Craft carry TiDB's numeric action code (`meta/model.ActionType`); Canal-JSON and
//! Simple carry only a category (`CREATE`, `ALTER`, …) derived from it. Going from a code to a
//! category is a table lookup. Going back needs the statement: TiCDC's own decoders recover the
//! code from the query's words (pingcap/ticdc `GetDDLActionType`), and so do we, so that a DDL
//! decoded from Canal-JSON or Simple encodes to Open or Craft with the code TiCDC would give it.

/// The category words of Canal-JSON's and Simple's `type`, in the order of Simple Avro's enum.
pub const CATEGORIES: [&str; 8] = ["CREATE", "ALTER", "ERASE", "RENAME", "TRUNCATE", "CINDEX", "DINDEX", "QUERY"];

/// The category of a DDL: the one the event carries, else the one of its action code, else the
/// one its statement reads as.
pub fn category(ddl_type: Option<&str>, sql: &str) -> &'static str {
    let ddl_type = ddl_type.map(str::trim);
    if let Some(c) = ddl_type.and_then(|t| CATEGORIES.iter().find(|c| c.eq_ignore_ascii_case(t))) {
        return c;
    }
    let code = ddl_type.and_then(|t| t.parse::<u64>().ok()).unwrap_or_else(|| code_of_query(sql));
    category_of_code(code)
}

/// The category TiCDC derives from an action code.
pub fn category_of_code(code: u64) -> &'static str {
    match code {
        3 => "CREATE",
        14 | 47 => "RENAME",
        7 | 9 | 32 => "CINDEX",
        8 | 10 | 33 => "DINDEX",
        4 => "ERASE",
        11 => "TRUNCATE",
        5 | 6 | 12 | 13 | 15 | 17 | 18 | 19 | 20 | 22 | 23 | 41 | 61 | 64 | 71 | 72 => "ALTER",
        _ => "QUERY",
    }
}

/// The action code of a DDL: the one the event carries, else the one of its statement.
pub fn code(ddl_type: Option<&str>, sql: &str) -> u64 {
    ddl_type.and_then(|t| t.trim().parse::<u64>().ok()).unwrap_or_else(|| code_of_query(sql))
}

/// The action code of a statement, by the words TiCDC looks for, in its order (and a few
/// spellings of index DDL it misses: `DROP KEY`, `ADD UNIQUE (…)`, `CREATE UNIQUE INDEX`); 0 (no
/// action) where none match, where TiCDC would stop.
pub fn code_of_query(sql: &str) -> u64 {
    let q = sql.trim_start().to_ascii_lowercase();
    let starts = |p: &str| q.starts_with(p);
    let has = |p: &str| q.contains(p);
    let rules: [(bool, u64); 33] = [
        (starts("create schema") || starts("create database"), 1),
        (starts("drop schema") || starts("drop database"), 2),
        (starts("create table"), 3),
        (starts("drop table"), 4),
        (starts("recover table"), 25),
        (starts("truncate"), 11),
        (starts("rename table") && has(","), 47),
        (starts("rename table"), 14),
        (has("add partition"), 19),
        (has("drop partition"), 20),
        (has("truncate partition"), 23),
        (has("reorganize partition"), 64),
        (has("exchange partition"), 42),
        (has("partition by"), 71),
        (has("remove partitioning"), 72),
        (has("character set") && starts("alter table"), 22),
        (has("character set") && starts("alter database"), 26),
        (has("add primary key"), 32),
        (
            ["add index", "add key", "add unique index", "add unique key", "add fulltext index", "add fulltext key"]
                .iter()
                .any(|p| has(p))
                || has("add unique ")
                || has("add unique(")
                || ["create index", "create unique index", "create fulltext index", "create spatial index"]
                    .iter()
                    .any(|p| starts(p)),
            7,
        ),
        (has("drop primary key"), 33),
        (has("drop index") || has("drop key"), 8),
        (has("add foreign key"), 9),
        (has("drop foreign key"), 10),
        (has("rename index"), 18),
        (has("set default") || has("drop default"), 15),
        (has("add column"), 5),
        (has("drop column"), 6),
        (has("modify"), 12),
        (has("change"), 12),
        (has("auto_increment"), 13),
        (has("invisible"), 41),
        (has("create view"), 21),
        (false, 0),
    ];
    rules.iter().find(|(hit, _)| *hit).map_or(0, |&(_, code)| code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_read_as_ticdc_reads_them() {
        for (sql, code) in [
            ("CREATE DATABASE d", 1),
            ("create table t (a int)", 3),
            ("  DROP TABLE `t`", 4),
            ("TRUNCATE TABLE t", 11),
            ("RENAME TABLE a TO b", 14),
            ("RENAME TABLE a TO b, c TO d", 47),
            ("ALTER TABLE t ADD PARTITION (PARTITION p2 VALUES LESS THAN (30))", 19),
            ("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4", 22),
            ("ALTER TABLE t ADD PRIMARY KEY (a)", 32),
            ("ALTER TABLE t ADD UNIQUE KEY u (a)", 7),
            ("CREATE INDEX i ON t (a)", 7),
            ("ALTER TABLE t DROP INDEX i", 8),
            ("ALTER TABLE t DROP KEY i", 8),
            ("CREATE UNIQUE INDEX i ON t (a)", 7),
            ("ALTER TABLE t ALTER COLUMN a SET DEFAULT 1", 15),
            ("ALTER TABLE t ADD COLUMN b int", 5),
            ("ALTER TABLE t DROP COLUMN b", 6),
            ("ALTER TABLE t MODIFY a bigint", 12),
            ("ALTER TABLE t CHANGE a b int", 12),
            ("ALTER TABLE t AUTO_INCREMENT = 100", 13),
            ("CREATE VIEW v AS SELECT 1", 21),
            ("GRANT ALL ON *.* TO u", 0),
        ] {
            assert_eq!(code_of_query(sql), code, "{sql}");
        }
    }

    #[test]
    fn codes_and_categories() {
        assert_eq!(code(Some("12"), "CREATE TABLE t (a int)"), 12);
        assert_eq!(code(Some("CREATE"), "CREATE TABLE t (a int)"), 3);
        assert_eq!(code(None, "ALTER TABLE t ADD COLUMN b int"), 5);
        assert_eq!(category(Some("cindex"), ""), "CINDEX");
        assert_eq!(category(Some("33"), ""), "DINDEX");
        assert_eq!(category(None, "ALTER TABLE t ADD INDEX i (a)"), "CINDEX");
        assert_eq!(category(None, "CREATE DATABASE d"), "QUERY");
    }
}
