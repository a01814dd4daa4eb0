//! Table definitions from DDL text: `CREATE TABLE` into a [`TableDefinition`], and the later
//! `ALTER TABLE` / `RENAME TABLE` / `TRUNCATE` statements applied to it.
//!
//! Row messages of most protocols carry too little to type a column exactly (no DECIMAL
//! precision, no ENUM members, no BIT width); the DDL that TiCDC forwards does. TiDB's dialect is
//! MySQL's plus a few extensions that no general SQL parser knows (`AUTO_RANDOM`, `CLUSTERED`,
//! `VECTOR(n)`, `ZEROFILL` where sqlparser does not expect it), and `SHOW CREATE TABLE` output is
//! full of table options and partition clauses that do not concern the columns. So the statement
//! is handled in two levels:
//!
//! * the statement frame — `CREATE TABLE name ( … )`, the comma-separated `ALTER TABLE`
//!   specifications — is read here from sqlparser's MySQL tokens, and everything after the
//!   column list (options, partitions) is left unread;
//! * each column definition and key constraint is parsed by sqlparser on its own, after the
//!   TiDB-only words are taken out. A column definition that still does not parse is retried
//!   with only its name, type and `NOT NULL`/`PRIMARY KEY`/`UNIQUE`, so an unusual `DEFAULT`
//!   expression does not lose the table.
//!
//! Type texts come out in TiDB's own spelling (`int(11) unsigned`, `decimal(10,2)`,
//! `enum('a','b')`, `varbinary(16)`), the form content-compatible Canal-JSON carries, so one
//! parser ([`TypeDescription::parse`](super::mysql::TypeDescription::parse)) reads every source.

use sqlparser::ast::{ColumnDef, ColumnOption, DataType, EnumMember, Expr, IndexColumn, Statement, TableConstraint};
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace, Word};

use crate::schema::table::{ColumnDefinition, TableDefinition};
use crate::schema::TableName;

/// Reads a `CREATE TABLE` statement. The schema is empty when the name is not qualified.
pub fn parse_create_table(sql: &str) -> Result<TableDefinition, String> {
    let tokens = tokenize(sql)?;
    let mut cur = Cursor::new(&tokens);
    match statement(&mut cur)? {
        Ddl::CreateTable(def) => Ok(def),
        _ => Err(format!("not a CREATE TABLE statement: {}", preview(sql))),
    }
}

/// Reads a DDL script such as a schema dump: its first `CREATE TABLE`, then, in order, the
/// statements after it that concern that table (`ALTER TABLE`, `RENAME TABLE`, the table created
/// again). Statements before it (`CREATE DATABASE`, `USE`), those of other tables and comments
/// are passed over; one `CREATE TABLE` statement is the simplest script.
pub fn parse_ddl_script(sql: &str) -> Result<TableDefinition, String> {
    let tokens = tokenize(sql)?;
    let statements: Vec<String> = tokens
        .split(|t| matches!(t, Token::SemiColon))
        .filter(|s| !s.is_empty())
        .map(|s| s.iter().map(ToString::to_string).collect::<Vec<_>>().join(" "))
        .collect();
    if statements.len() <= 1 {
        return parse_create_table(sql);
    }
    let mut def: Option<TableDefinition> = None;
    for statement in &statements {
        match &mut def {
            None => def = parse_create_table(statement).ok(),
            Some(d) => {
                apply_ddl(d, statement).map_err(|e| format!("{e} (in {})", preview(statement)))?;
            }
        }
    }
    def.ok_or_else(|| format!("no CREATE TABLE statement that reads in: {}", preview(sql)))
}

/// Applies one DDL statement to `def`. Returns whether the statement concerns this table
/// (`false`: another table, or a statement that changes no table). A `CREATE TABLE` of the same
/// table replaces the definition; `TRUNCATE`, `DROP TABLE` and index changes leave it as is.
pub fn apply_ddl(def: &mut TableDefinition, sql: &str) -> Result<bool, String> {
    let tokens = tokenize(sql)?;
    let mut cur = Cursor::new(&tokens);
    match statement(&mut cur)? {
        Ddl::CreateTable(new) => {
            if !names_table(def, &new.schema, &new.table) {
                return Ok(false);
            }
            let schema = if new.schema.is_empty() { def.schema.clone() } else { new.schema.clone() };
            *def = TableDefinition { schema, ..new };
            Ok(true)
        }
        Ddl::AlterTable { schema, table, specs } => {
            if !names_table(def, &schema, &table) {
                return Ok(false);
            }
            for spec in specs {
                alter(def, spec)?;
            }
            Ok(true)
        }
        Ddl::Rename(pairs) => {
            let mut concerned = false;
            for ((schema, table), (new_schema, new_table)) in pairs {
                if names_table(def, &schema, &table) {
                    if !new_schema.is_empty() {
                        def.schema = new_schema;
                    }
                    def.table = new_table;
                    concerned = true;
                }
            }
            Ok(concerned)
        }
        Ddl::Touches(names) => Ok(names.iter().any(|(s, t)| names_table(def, s, t))),
        Ddl::Other => Ok(false),
    }
}

/// Follows one DDL statement of a stream for the table `table`: a `CREATE TABLE` of it starts
/// (or restarts) the definition, other statements are applied to the definition once there is
/// one. `default_schema` qualifies unqualified names (the DDL event's schema). Returns whether
/// the definition changed; statements that cannot be read leave it as it was.
pub fn follow_ddl(
    def: &mut Option<TableDefinition>,
    table: &TableName,
    default_schema: Option<&str>,
    sql: &str,
) -> bool {
    if let Ok(mut created) = parse_create_table(sql) {
        if created.schema.is_empty() {
            created.schema = default_schema.unwrap_or_default().to_string();
        }
        let same =
            created.schema.eq_ignore_ascii_case(&table.schema) && created.table.eq_ignore_ascii_case(&table.table);
        if same {
            created.schema = table.schema.clone();
            created.table = table.table.clone();
            *def = Some(created);
        }
        return same;
    }
    match def {
        Some(d) => {
            let before = d.clone();
            apply_ddl(d, sql).is_ok_and(|c| c) && *d != before
        }
        None => false,
    }
}

fn preview(sql: &str) -> String {
    let s: String = sql.chars().take(60).collect();
    if s.len() < sql.len() {
        format!("{s}…")
    } else {
        s
    }
}

fn names_table(def: &TableDefinition, schema: &str, table: &str) -> bool {
    table.eq_ignore_ascii_case(&def.table) && (schema.is_empty() || schema.eq_ignore_ascii_case(&def.schema))
}

// ---------------------------------------------------------------------------------------------
// Tokens

fn tokenize(sql: &str) -> Result<Vec<Token>, String> {
    let dialect = MySqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql).tokenize().map_err(|e| format!("DDL: {e}"))?;
    // Comments (TiDB's `/*T![clustered_index] CLUSTERED */` among them) and line breaks are
    // only whitespace to us.
    Ok(tokens
        .into_iter()
        .filter_map(|t| match t {
            Token::Whitespace(Whitespace::Space) => None,
            Token::Whitespace(_) => None,
            t => Some(t),
        })
        .collect())
}

fn word(t: &Token) -> Option<&Word> {
    match t {
        Token::Word(w) => Some(w),
        _ => None,
    }
}

/// An unquoted keyword-like word, compared case-insensitively.
fn is_word(t: &Token, name: &str) -> bool {
    word(t).is_some_and(|w| w.quote_style.is_none() && w.value.eq_ignore_ascii_case(name))
}

fn render(tokens: &[Token]) -> String {
    let mut out = String::new();
    for t in tokens {
        if !out.is_empty() {
            out.push(' ');
        }
        match t {
            // Written back with the escapes the tokenizer took out.
            Token::SingleQuotedString(s) => {
                out.push('\'');
                out.push_str(&s.replace('\\', "\\\\").replace('\'', "''"));
                out.push('\'');
            }
            Token::Word(w) if w.quote_style == Some('`') => {
                out.push('`');
                out.push_str(&w.value.replace('`', "``"));
                out.push('`');
            }
            t => out.push_str(&t.to_string()),
        }
    }
    out
}

struct Cursor<'t> {
    tokens: &'t [Token],
    at: usize,
}

impl<'t> Cursor<'t> {
    fn new(tokens: &'t [Token]) -> Self {
        Cursor { tokens: tokens.strip_suffix(&[Token::EOF]).unwrap_or(tokens), at: 0 }
    }

    fn peek(&self) -> Option<&'t Token> {
        self.tokens.get(self.at)
    }

    fn eat(&mut self, name: &str) -> bool {
        let hit = self.peek().is_some_and(|t| is_word(t, name));
        self.at += hit as usize;
        hit
    }

    fn eat_if_exists(&mut self) {
        if self.eat("IF") {
            self.eat("EXISTS");
        }
    }

    fn eat_token(&mut self, token: &Token) -> bool {
        let hit = self.peek() == Some(token);
        self.at += hit as usize;
        hit
    }

    fn ident(&mut self) -> Result<String, String> {
        match self.peek().and_then(word) {
            Some(w) => {
                self.at += 1;
                Ok(w.value.clone())
            }
            None => {
                Err(format!("DDL: expected a name, found {}", self.peek().map_or("the end".into(), |t| t.to_string())))
            }
        }
    }

    /// `name` or `schema.name`; the schema is empty when not given.
    fn table_name(&mut self) -> Result<(String, String), String> {
        let first = self.ident()?;
        if self.eat_token(&Token::Period) {
            Ok((first, self.ident()?))
        } else {
            Ok((String::new(), first))
        }
    }

    /// The tokens up to the next top-level comma (or `stop`, or the end), without it.
    fn element(&mut self, stop: Option<&Token>) -> &'t [Token] {
        let start = self.at;
        let mut depth = 0usize;
        while let Some(t) = self.peek() {
            match t {
                Token::LParen => depth += 1,
                Token::RParen if depth == 0 => break,
                Token::RParen => depth -= 1,
                Token::Comma | Token::SemiColon if depth == 0 => break,
                _ => {}
            }
            if depth == 0 && stop.is_some_and(|s| s == t) {
                break;
            }
            self.at += 1;
        }
        &self.tokens[start..self.at]
    }
}

// ---------------------------------------------------------------------------------------------
// Statements

enum Ddl {
    CreateTable(TableDefinition),
    AlterTable {
        schema: String,
        table: String,
        specs: Vec<AlterSpec>,
    },
    Rename(Vec<((String, String), (String, String))>),
    /// Statements on these tables that do not change their columns.
    Touches(Vec<(String, String)>),
    Other,
}

enum Position {
    Last,
    First,
    After(String),
}

enum AlterSpec {
    AddColumn(ColumnDefinition, Position, KeyRole),
    AddPrimaryKey(Vec<String>),
    DropColumn(String),
    DropPrimaryKey,
    /// MODIFY (old name = new name) and CHANGE.
    ReplaceColumn(String, ColumnDefinition, Position, KeyRole),
    RenameColumn(String, String),
    RenameTable(String, String),
    AlterColumn,
}

fn statement(cur: &mut Cursor<'_>) -> Result<Ddl, String> {
    if cur.eat("CREATE") {
        while cur.eat("TEMPORARY") || cur.eat("GLOBAL") || cur.eat("LOCAL") {}
        if cur.eat("TABLE") {
            return create_table(cur).map(Ddl::CreateTable);
        }
        let unique = cur.eat("UNIQUE") || cur.eat("FULLTEXT") || cur.eat("SPATIAL");
        if cur.eat("INDEX") || unique && cur.eat("KEY") {
            return index_on(cur);
        }
        return Ok(Ddl::Other);
    }
    if cur.eat("ALTER") {
        if !cur.eat("TABLE") {
            return Ok(Ddl::Other);
        }
        let (schema, table) = cur.table_name()?;
        let mut specs = Vec::new();
        loop {
            let element = cur.element(None);
            if !element.is_empty() {
                alter_spec(element, &mut specs)?;
            }
            if !cur.eat_token(&Token::Comma) {
                break;
            }
        }
        return Ok(Ddl::AlterTable { schema, table, specs });
    }
    if cur.eat("RENAME") {
        if !cur.eat("TABLE") {
            return Ok(Ddl::Other);
        }
        let mut pairs = Vec::new();
        loop {
            let from = cur.table_name()?;
            if !cur.eat("TO") {
                return Err("DDL: RENAME TABLE without TO".into());
            }
            pairs.push((from, cur.table_name()?));
            if !cur.eat_token(&Token::Comma) {
                break;
            }
        }
        return Ok(Ddl::Rename(pairs));
    }
    if cur.eat("TRUNCATE") {
        cur.eat("TABLE");
        return Ok(Ddl::Touches(vec![cur.table_name()?]));
    }
    if cur.eat("DROP") {
        cur.eat("TEMPORARY");
        if cur.eat("TABLE") {
            if cur.eat("IF") && !cur.eat("EXISTS") {
                return Err("DDL: DROP TABLE IF without EXISTS".into());
            }
            let mut names = vec![cur.table_name()?];
            while cur.eat_token(&Token::Comma) {
                names.push(cur.table_name()?);
            }
            return Ok(Ddl::Touches(names));
        }
        if cur.eat("INDEX") || cur.eat("KEY") {
            return index_on(cur);
        }
    }
    Ok(Ddl::Other)
}

/// `… index_name ON table …` of CREATE/DROP INDEX: concerns the table, changes no column.
fn index_on(cur: &mut Cursor<'_>) -> Result<Ddl, String> {
    while let Some(t) = cur.peek() {
        cur.at += 1;
        if is_word(t, "ON") {
            return Ok(Ddl::Touches(vec![cur.table_name()?]));
        }
    }
    Ok(Ddl::Other)
}

fn create_table(cur: &mut Cursor<'_>) -> Result<TableDefinition, String> {
    if cur.eat("IF") && !(cur.eat("NOT") && cur.eat("EXISTS")) {
        return Err("DDL: CREATE TABLE IF without NOT EXISTS".into());
    }
    let (schema, table) = cur.table_name()?;
    if !cur.eat_token(&Token::LParen) {
        return Err(format!("DDL: CREATE TABLE {table} has no column list (LIKE and AS SELECT are not read)"));
    }
    let mut def = TableDefinition { schema, table, columns: Vec::new(), primary_key: Vec::new() };
    // Unique keys in statement order, for the handle when there is no primary key.
    let mut unique_keys: Vec<Vec<String>> = Vec::new();
    loop {
        let element = cur.element(None);
        if !element.is_empty() {
            match table_element(element)? {
                Element::Column(column, role) => {
                    match role {
                        KeyRole::Primary => def.primary_key = vec![column.name.clone()],
                        KeyRole::Unique => unique_keys.push(vec![column.name.clone()]),
                        KeyRole::None => {}
                    }
                    def.columns.push(column);
                }
                Element::PrimaryKey(columns) => def.primary_key = columns,
                Element::Unique(columns) => unique_keys.push(columns),
                Element::Other => {}
            }
        }
        if !cur.eat_token(&Token::Comma) {
            break;
        }
    }
    if !cur.eat_token(&Token::RParen) {
        return Err(format!("DDL: CREATE TABLE {}: unbalanced column list", def.table));
    }
    // Table options and partitions follow; they do not concern the columns.
    if def.columns.is_empty() {
        return Err(format!("DDL: CREATE TABLE {} has no columns", def.table));
    }
    if def.primary_key.is_empty() {
        let not_null = |name: &String| def.columns.iter().any(|c| c.name.eq_ignore_ascii_case(name) && !c.nullable);
        if let Some(key) = unique_keys.into_iter().find(|k| k.iter().all(not_null)) {
            def.primary_key = key;
        }
    }
    canonical_key_names(&mut def);
    Ok(def)
}

/// Key columns named as the columns are (MySQL names are case-insensitive); key columns are
/// never null.
fn canonical_key_names(def: &mut TableDefinition) {
    for key in &mut def.primary_key {
        if let Some(c) = def.columns.iter_mut().find(|c| c.name.eq_ignore_ascii_case(key)) {
            key.clone_from(&c.name);
            c.nullable = false;
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum KeyRole {
    None,
    Primary,
    Unique,
}

enum Element {
    Column(ColumnDefinition, KeyRole),
    PrimaryKey(Vec<String>),
    Unique(Vec<String>),
    Other,
}

/// Words that start a key or constraint rather than a column.
const CONSTRAINT_WORDS: [&str; 9] =
    ["PRIMARY", "UNIQUE", "KEY", "INDEX", "CONSTRAINT", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK"];

fn table_element(tokens: &[Token]) -> Result<Element, String> {
    let first = &tokens[0];
    let is_constraint = CONSTRAINT_WORDS.iter().any(|w| is_word(first, w)) && word(first).is_some_and(|w| w.quote_style.is_none())
        // `key int` is a column called key: constraints continue with `(`, a name or KEY.
        && !(tokens.len() > 1 && looks_like_type(&tokens[1]));
    if is_constraint {
        let (clean, _) = clean(tokens);
        return Ok(match parse_in_table(&clean) {
            Ok((_, constraints)) => match constraints.into_iter().next() {
                Some(TableConstraint::PrimaryKey(pk)) => Element::PrimaryKey(index_columns(&pk.columns)),
                Some(TableConstraint::Unique(u)) => Element::Unique(index_columns(&u.columns)),
                _ => Element::Other,
            },
            // Index syntax sqlparser does not know changes no column.
            Err(_) => Element::Other,
        });
    }
    let (column, role) = column_definition(tokens)?;
    Ok(Element::Column(column, role))
}

/// Whether a token after a constraint-like first word is a data type, i.e. the element is a
/// column whose name happens to be a keyword (`key varchar(10)`).
fn looks_like_type(t: &Token) -> bool {
    word(t).is_some_and(|w| {
        w.quote_style.is_none()
            && !w.value.eq_ignore_ascii_case("KEY")
            && !w.value.eq_ignore_ascii_case("INDEX")
            && crate::schema::mysql::MySqlType::from_name(&w.value).0 != crate::schema::mysql::MySqlType::Unknown
    })
}

fn parse_in_table(element: &str) -> Result<(Vec<ColumnDef>, Vec<TableConstraint>), String> {
    let sql = format!("CREATE TABLE t ({element})");
    let statement = Parser::new(&MySqlDialect {})
        .try_with_sql(&sql)
        .and_then(|mut p| p.parse_statement())
        .map_err(|e| format!("DDL: {e}"))?;
    match statement {
        Statement::CreateTable(ct) => Ok((ct.columns, ct.constraints)),
        _ => Err("DDL: not a table element".into()),
    }
}

fn index_columns(columns: &[IndexColumn]) -> Vec<String> {
    columns
        .iter()
        .filter_map(|c| match &c.column.expr {
            Expr::Identifier(i) => Some(i.value.clone()),
            Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()),
            // A prefix key `name(10)` reads as a call.
            Expr::Function(f) => f.name.0.last().and_then(|p| p.as_ident()).map(|i| i.value.clone()),
            _ => None,
        })
        .collect()
}

/// Takes the TiDB-only words out of one element: `AUTO_RANDOM[(n[, m])]`, `CLUSTERED`,
/// `NONCLUSTERED`, the `<FLOAT>` of `VECTOR<FLOAT>`, `CHARSET` (spelt `CHARACTER SET`), and
/// `ZEROFILL` (kept as `UNSIGNED`, which it implies; reported separately). MySQL type spellings
/// sqlparser does not know are spelt its way: `NATIONAL VARCHAR` as `VARCHAR`, `LONG [VARCHAR]`
/// as `MEDIUMTEXT`, `LONG VARBINARY` as `MEDIUMBLOB`.
fn clean(tokens: &[Token]) -> (String, bool) {
    let mut out: Vec<Token> = Vec::with_capacity(tokens.len());
    let mut zerofill = false;
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        i += 1;
        if is_word(t, "AUTO_RANDOM") {
            if tokens.get(i) == Some(&Token::LParen) {
                while i < tokens.len() && tokens[i] != Token::RParen {
                    i += 1;
                }
                i += 1;
            }
        } else if is_word(t, "CLUSTERED") || is_word(t, "NONCLUSTERED") || (i >= 2 && is_word(t, "NATIONAL")) {
        } else if i == 2 && is_word(t, "LONG") {
            let next = tokens.get(i);
            let blob = next.is_some_and(|n| is_word(n, "VARBINARY"));
            if blob || next.is_some_and(|n| is_word(n, "VARCHAR")) {
                i += 1;
            }
            out.push(Token::make_keyword(if blob { "MEDIUMBLOB" } else { "MEDIUMTEXT" }));
        } else if is_word(t, "ZEROFILL") {
            zerofill = true;
            if !out.last().is_some_and(|p| is_word(p, "UNSIGNED")) {
                out.push(Token::make_keyword("UNSIGNED"));
            }
        } else if is_word(t, "CHARSET") {
            out.push(Token::make_keyword("CHARACTER"));
            out.push(Token::make_keyword("SET"));
        } else if is_word(t, "VECTOR") && tokens.get(i) == Some(&Token::Lt) {
            out.push(t.clone());
            while i < tokens.len() && tokens[i] != Token::Gt {
                i += 1;
            }
            i += 1;
        } else {
            out.push(t.clone());
        }
    }
    (render(&out), zerofill)
}

fn column_definition(tokens: &[Token]) -> Result<(ColumnDefinition, KeyRole), String> {
    let (clean_text, zerofill) = clean(tokens);
    let column = match parse_in_table(&clean_text) {
        Ok((mut columns, _)) if columns.len() == 1 => columns.remove(0),
        first_try => {
            // Retry with only what concerns the type and the keys.
            let words = [
                "NOT", "NULL", "DEFAULT", "PRIMARY", "UNIQUE", "KEY", "COMMENT", "AUTO_INCREMENT", "GENERATED", "AS",
                "ON", "COLLATE", "REFERENCES", "CHECK", "CONSTRAINT", "STORAGE", "COLUMN_FORMAT", "INVISIBLE",
                "VISIBLE", "SRID",
            ];
            let end =
                tokens.iter().skip(1).position(|t| words.iter().any(|w| is_word(t, w))).map_or(tokens.len(), |p| p + 1);
            let mut text = clean(&tokens[..end]).0;
            let has = |a: &str, b: Option<&str>| {
                tokens.windows(2).any(|w| is_word(&w[0], a) && b.is_none_or(|b| is_word(&w[1], b)))
                    || b.is_none() && tokens.last().is_some_and(|t| is_word(t, a))
            };
            if has("NOT", Some("NULL")) {
                text.push_str(" NOT NULL");
            }
            if has("PRIMARY", None) {
                text.push_str(" PRIMARY KEY");
            } else if has("UNIQUE", None) {
                text.push_str(" UNIQUE");
            }
            match parse_in_table(&text) {
                Ok((mut columns, _)) if columns.len() == 1 => columns.remove(0),
                _ => {
                    let reason = first_try.err().unwrap_or_else(|| "not one column".into());
                    return Err(format!("column definition `{}`: {reason}", render(tokens)));
                }
            }
        }
    };
    Ok(from_column_def(&column, zerofill))
}

fn from_column_def(column: &ColumnDef, zerofill: bool) -> (ColumnDefinition, KeyRole) {
    let mut nullable = true;
    let mut role = KeyRole::None;
    let mut binary_charset = false;
    for option in &column.options {
        match &option.option {
            ColumnOption::NotNull => nullable = false,
            ColumnOption::Null => nullable = true,
            ColumnOption::PrimaryKey(_) => {
                role = KeyRole::Primary;
                nullable = false;
            }
            ColumnOption::Unique(_) if role == KeyRole::None => role = KeyRole::Unique,
            ColumnOption::CharacterSet(name) => binary_charset = name.to_string().eq_ignore_ascii_case("binary"),
            _ => {}
        }
    }
    // SERIAL is BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE.
    if column.data_type.to_string().eq_ignore_ascii_case("serial") {
        nullable = false;
        if role == KeyRole::None {
            role = KeyRole::Unique;
        }
    }
    let text = type_text(&column.data_type, binary_charset, zerofill);
    (ColumnDefinition::new(column.name.value.clone(), text, nullable), role)
}

/// TiDB's spelling of a column type (`GetTypeDesc`): lower case, no spaces in argument lists,
/// aliases resolved, DECIMAL's default precision and scale made explicit.
fn type_text(data_type: &DataType, binary_charset: bool, zerofill: bool) -> String {
    let quoted = |members: &mut dyn Iterator<Item = &String>| {
        members.map(|m| format!("'{}'", m.replace('\\', "\\\\").replace('\'', "''"))).collect::<Vec<_>>().join(",")
    };
    let mut text = match data_type {
        DataType::Enum(members, _) => {
            let mut names = members.iter().map(|m| match m {
                EnumMember::Name(n) | EnumMember::NamedValue(n, _) => n,
            });
            format!("enum({})", quoted(&mut names))
        }
        DataType::Set(members) => format!("set({})", quoted(&mut members.iter())),
        DataType::Custom(name, modifiers) => {
            let name = name.0.last().map(|p| p.to_string().to_ascii_lowercase()).unwrap_or_default();
            let args: Vec<String> = modifiers.iter().map(|m| m.to_ascii_lowercase()).collect();
            let (args, rest): (Vec<String>, Vec<String>) =
                args.into_iter().partition(|a| a.bytes().all(|b| b.is_ascii_digit()));
            let mut t = if args.is_empty() { name } else { format!("{name}({})", args.join(",")) };
            for word in rest {
                t.push(' ');
                t.push_str(&word);
            }
            t
        }
        other => other.to_string().to_ascii_lowercase().replace(", ", ","),
    };
    let name_end = text.find(['(', ' ']).unwrap_or(text.len());
    let (name, rest) = text.split_at(name_end);
    let (name, rest) = match (name, rest) {
        ("integer" | "int4", _) => ("int", rest.to_string()),
        ("int1", _) => ("tinyint", rest.to_string()),
        ("int2", _) => ("smallint", rest.to_string()),
        ("int3" | "middleint", _) => ("mediumint", rest.to_string()),
        ("int8", _) => ("bigint", rest.to_string()),
        ("bool" | "boolean", _) => ("tinyint", "(1)".to_string()),
        ("real" | "float8", _) => ("double", rest.to_string()),
        ("float4", _) => ("float", rest.to_string()),
        ("double", r) if r.starts_with(" precision") => ("double", r[" precision".len()..].to_string()),
        ("numeric" | "dec" | "fixed" | "decimal", r) => ("decimal", decimal_args(r)),
        ("character", r) if r.starts_with(" varying") => ("varchar", r[" varying".len()..].to_string()),
        ("char", r) if r.starts_with(" varying") => ("varchar", r[" varying".len()..].to_string()),
        ("character" | "nchar", _) => ("char", rest.to_string()),
        ("nvarchar", _) => ("varchar", rest.to_string()),
        ("serial", _) => ("bigint", " unsigned".to_string()),
        ("bit", r) if !r.starts_with('(') => ("bit", format!("(1){r}")),
        (
            "point" | "linestring" | "polygon" | "multipoint" | "multilinestring" | "multipolygon"
            | "geometrycollection",
            _,
        ) => ("geometry", String::new()),
        (name, rest) => (name, rest.to_string()),
    };
    let name = match (name, binary_charset) {
        ("char", true) => "binary",
        ("varchar", true) => "varbinary",
        ("tinytext", true) => "tinyblob",
        ("text", true) => "blob",
        ("mediumtext", true) => "mediumblob",
        ("longtext", true) => "longblob",
        (name, _) => name,
    };
    text = format!("{name}{rest}");
    if zerofill {
        if !text.contains(" unsigned") {
            text.push_str(" unsigned");
        }
        text.push_str(" zerofill");
    }
    text
}

/// `(p,s)` for DECIMAL: MySQL's defaults are precision 10 and scale 0.
fn decimal_args(rest: &str) -> String {
    let (args, tail) = match rest.strip_prefix('(').and_then(|r| r.split_once(')')) {
        Some((args, tail)) => (args, tail),
        None => ("", rest),
    };
    let mut parts = args.split(',').map(str::trim).filter(|p| !p.is_empty());
    let precision = parts.next().unwrap_or("10");
    let scale = parts.next().unwrap_or("0");
    format!("({precision},{scale}){tail}")
}

// ---------------------------------------------------------------------------------------------
// ALTER TABLE

fn position(tokens: &[Token]) -> (&[Token], Position) {
    match tokens {
        [rest @ .., last] if is_word(last, "FIRST") => (rest, Position::First),
        [rest @ .., after, Token::Word(w)] if is_word(after, "AFTER") => (rest, Position::After(w.value.clone())),
        _ => (tokens, Position::Last),
    }
}

fn alter_spec(tokens: &[Token], out: &mut Vec<AlterSpec>) -> Result<(), String> {
    let mut cur = Cursor::new(tokens);
    if cur.eat("ADD") {
        if cur.eat("PRIMARY") && cur.eat("KEY") {
            out.push(AlterSpec::AddPrimaryKey(primary_key_columns(&tokens[cur.at..])?));
            return Ok(());
        }
        if CONSTRAINT_WORDS.iter().any(|w| cur.peek().is_some_and(|t| is_word(t, w))) {
            if let Element::PrimaryKey(columns) = table_element(&tokens[cur.at..])? {
                out.push(AlterSpec::AddPrimaryKey(columns));
                return Ok(());
            }
            return Ok(());
        }
        cur.eat("COLUMN");
        let rest = &tokens[cur.at..];
        // `ADD COLUMN (a int, b int)`: several columns, each added at the end.
        if let [Token::LParen, inner @ .., Token::RParen] = rest {
            let mut inner_cur = Cursor::new(inner);
            loop {
                let element = inner_cur.element(None);
                if !element.is_empty() {
                    let (column, role) = column_definition(element)?;
                    out.push(AlterSpec::AddColumn(column, Position::Last, role));
                }
                if !inner_cur.eat_token(&Token::Comma) {
                    return Ok(());
                }
            }
        }
        let (definition, at) = position(rest);
        let (column, role) = column_definition(definition)?;
        out.push(AlterSpec::AddColumn(column, at, role));
        return Ok(());
    }
    if cur.eat("DROP") {
        if cur.eat("PRIMARY") && cur.eat("KEY") {
            out.push(AlterSpec::DropPrimaryKey);
            return Ok(());
        }
        let other = ["INDEX", "KEY", "FOREIGN", "CONSTRAINT", "CHECK", "PARTITION", "DEFAULT"];
        if other.iter().any(|w| cur.peek().is_some_and(|t| is_word(t, w))) {
            return Ok(());
        }
        cur.eat("COLUMN");
        cur.eat_if_exists();
        out.push(AlterSpec::DropColumn(cur.ident()?));
        return Ok(());
    }
    if cur.eat("MODIFY") {
        cur.eat("COLUMN");
        cur.eat_if_exists();
        let (definition, at) = position(&tokens[cur.at..]);
        let (column, role) = column_definition(definition)?;
        out.push(AlterSpec::ReplaceColumn(column.name.clone(), column, at, role));
        return Ok(());
    }
    if cur.eat("CHANGE") {
        cur.eat("COLUMN");
        cur.eat_if_exists();
        let old = cur.ident()?;
        let (definition, at) = position(&tokens[cur.at..]);
        let (column, role) = column_definition(definition)?;
        out.push(AlterSpec::ReplaceColumn(old, column, at, role));
        return Ok(());
    }
    if cur.eat("RENAME") {
        if cur.eat("COLUMN") {
            let old = cur.ident()?;
            if !cur.eat("TO") {
                return Err("DDL: RENAME COLUMN without TO".into());
            }
            out.push(AlterSpec::RenameColumn(old, cur.ident()?));
            return Ok(());
        }
        if cur.eat("INDEX") || cur.eat("KEY") {
            return Ok(());
        }
        let _ = cur.eat("TO") || cur.eat("AS");
        let (schema, table) = cur.table_name()?;
        out.push(AlterSpec::RenameTable(schema, table));
        return Ok(());
    }
    if cur.eat("ALTER") {
        out.push(AlterSpec::AlterColumn);
        return Ok(());
    }
    Ok(())
}

fn primary_key_columns(tokens: &[Token]) -> Result<Vec<String>, String> {
    let mut text = String::from("PRIMARY KEY ");
    text.push_str(&clean(tokens).0);
    match parse_in_table(&text)?.1.into_iter().next() {
        Some(TableConstraint::PrimaryKey(pk)) => Ok(index_columns(&pk.columns)),
        _ => Err("DDL: ADD PRIMARY KEY without columns".into()),
    }
}

fn column_index(def: &TableDefinition, name: &str) -> Option<usize> {
    def.columns.iter().position(|c| c.name.eq_ignore_ascii_case(name))
}

fn insert_at(def: &mut TableDefinition, column: ColumnDefinition, at: Position) -> Result<(), String> {
    let index = match at {
        Position::Last => def.columns.len(),
        Position::First => 0,
        Position::After(name) => {
            column_index(def, &name).ok_or_else(|| format!("DDL: AFTER unknown column {name}"))? + 1
        }
    };
    def.columns.insert(index, column);
    Ok(())
}

fn alter(def: &mut TableDefinition, spec: AlterSpec) -> Result<(), String> {
    match spec {
        AlterSpec::AddColumn(column, at, role) => {
            if column_index(def, &column.name).is_some() {
                return Err(format!("DDL: column {} already exists", column.name));
            }
            if role == KeyRole::Primary {
                def.primary_key = vec![column.name.clone()];
            }
            insert_at(def, column, at)?;
        }
        AlterSpec::AddPrimaryKey(columns) => {
            def.primary_key = columns;
            canonical_key_names(def);
        }
        AlterSpec::DropColumn(name) => {
            let index = column_index(def, &name).ok_or_else(|| format!("DDL: no column {name} to drop"))?;
            def.columns.remove(index);
            def.primary_key.retain(|k| !k.eq_ignore_ascii_case(&name));
        }
        AlterSpec::DropPrimaryKey => def.primary_key.clear(),
        AlterSpec::ReplaceColumn(old, column, at, role) => {
            let index = column_index(def, &old).ok_or_else(|| format!("DDL: no column {old} to change"))?;
            let old_name = def.columns.remove(index).name;
            for key in def.primary_key.iter_mut().filter(|k| k.eq_ignore_ascii_case(&old_name)) {
                key.clone_from(&column.name);
            }
            if role == KeyRole::Primary {
                def.primary_key = vec![column.name.clone()];
            }
            match at {
                Position::Last => def.columns.insert(index, column),
                at => insert_at(def, column, at)?,
            }
            canonical_key_names(def);
        }
        AlterSpec::RenameColumn(old, new) => {
            let index = column_index(def, &old).ok_or_else(|| format!("DDL: no column {old} to rename"))?;
            for key in def.primary_key.iter_mut().filter(|k| k.eq_ignore_ascii_case(&old)) {
                key.clone_from(&new);
            }
            def.columns[index].name = new;
        }
        AlterSpec::RenameTable(schema, table) => {
            if !schema.is_empty() {
                def.schema = schema;
            }
            def.table = table;
        }
        AlterSpec::AlterColumn => {}
    }
    Ok(())
}
