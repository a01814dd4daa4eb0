//! The typed layout: one table's columns with real Arrow types, then `_before`, a struct of the
//! same columns holding the old row of an UPDATE.
//!
//! The columns themselves are a [`TableColumns`], which codecs may also write into directly
//! ([`Layout::table_columns`]). The layout adds what only the event stream says: which events
//! belong to the table, the values of the row images of events (matched to fields by name), and
//! the table's definition, followed through its DDL so that ENUM/SET values are read by the
//! members of the moment, and through a RENAME to the table's new name.

use arrow_array::ArrayRef;
use arrow_schema::{FieldRef, Fields};

use super::Layout;
use crate::codec::simple::TableSchema;
use crate::columns::TableColumns;
use crate::error::FaultResult;
use crate::event::{Column, Event, EventKind, MessageEvents};
use crate::schema::mapping::MYSQL_TYPE_KEY;
use crate::schema::table::{ColumnDefinition, TableDefinition};
use crate::schema::{ServerZone, TableName};

pub struct TypedLayout {
    columns: TableColumns,
    /// The table as its DDL describes it, followed through the DDL events of the stream: it
    /// says how to read values (ENUM/SET members) while the output schema stays as declared.
    definition: Option<TableDefinition>,
}

impl TypedLayout {
    pub fn new(table: TableName, fields: &Fields, zone: ServerZone) -> Result<TypedLayout, String> {
        // The declared fields' `mysql_type` texts are the definition until a DDL says more.
        let columns: Vec<ColumnDefinition> = fields
            .iter()
            .filter_map(|f| {
                let text = f.metadata().get(MYSQL_TYPE_KEY)?;
                Some(ColumnDefinition::new(f.name(), text, f.is_nullable()))
            })
            .collect();
        let definition = (!columns.is_empty()).then(|| TableDefinition {
            schema: table.schema.clone(),
            table: table.table.clone(),
            columns,
            primary_key: Vec::new(),
        });
        Ok(TypedLayout { columns: TableColumns::new(table, fields, zone)?, definition })
    }

    fn table(&self) -> &TableName {
        self.columns.table()
    }

    /// Whether `sql` may rename this table. TiCDC reports a RENAME under the table's new name,
    /// so such a statement is followed (and kept) even though its event names another table;
    /// [`crate::schema::ddl::follow_ddl`] then decides from the statement itself.
    fn renames_this_table(&self, sql: &str) -> bool {
        let sql = sql.to_ascii_lowercase();
        sql.contains("rename") && sql.contains(&self.table().table.to_ascii_lowercase())
    }

    /// Follows a DDL or BOOTSTRAP event of this table: a `CREATE TABLE` (re)starts the
    /// definition, other statements change it; then a table schema the event carries (Simple's
    /// `tableSchema`, from which TiCDC's own decoder reads the rows after it) replaces it. The
    /// ENUM/SET members used to read values are taken from the definition again.
    fn follow(&mut self, event: &Event<'_>) {
        let table = self.table().clone();
        let followed = event.ddl.as_deref().is_some_and(|sql| {
            crate::schema::ddl::follow_ddl(&mut self.definition, &table, event.schema.as_deref(), sql)
        });
        if let Some(definition) = self.definition.as_ref().filter(|_| followed) {
            // RENAME TABLE: the table's events now come under its new name.
            self.columns.rename(TableName { schema: definition.schema.clone(), table: definition.table.clone() });
        }
        let carried = event.table_schema.as_deref().and_then(|text| TableSchema::from_json(text).ok());
        let carried = carried.map(|s| s.definition()).filter(|d| self.table().matches(Some(&d.schema), Some(&d.table)));
        match carried {
            Some(definition) => self.definition = Some(definition),
            None if !followed => return,
            None => {}
        }
        if let Some(definition) = &self.definition {
            self.columns.follow_definition(definition);
        }
    }

    /// Appends one row image to the row's columns, or to `_before`'s for an old image.
    fn append_image(&mut self, old: bool, columns: &[Column<'_>], range: std::ops::Range<usize>) -> FaultResult<()> {
        self.columns.begin_image(old);
        for (position, column) in columns[range].iter().enumerate() {
            let field = self.columns.field_at(&column.name, position);
            self.columns.put(field, &column.value, column.at)?;
        }
        self.columns.end_image();
        Ok(())
    }

    fn append_events(&mut self, events: &MessageEvents<'_>, kept: &[usize]) -> FaultResult<()> {
        for event in kept.iter().map(|&i| &events.events[i]) {
            if matches!(event.kind, EventKind::Ddl | EventKind::Bootstrap) {
                self.follow(event);
            }
            let Some(image) = event.after.clone().or(event.before.clone()) else {
                // DDL and watermarks: a row of nulls.
                self.columns.append_null_row();
                continue;
            };
            self.append_image(false, &events.columns, image)?;
            match (event.kind, event.before.clone()) {
                (EventKind::Update, Some(old)) => {
                    self.append_image(true, &events.columns, old)?;
                    self.columns.end_row(true);
                }
                _ => self.columns.end_row(false),
            }
        }
        Ok(())
    }
}

impl Layout for TypedLayout {
    fn fields(&self) -> Vec<FieldRef> {
        self.columns.output_fields()
    }

    fn set_input(&mut self, buffers: &[arrow_buffer::Buffer]) {
        self.columns.set_input(buffers)
    }

    fn keeps(&self, event: &Event<'_>) -> bool {
        let (schema, table, ours) = (event.schema.as_deref(), event.table.as_deref(), self.table());
        match event.kind {
            EventKind::Watermark => true,
            EventKind::Ddl => {
                (schema == Some(ours.schema.as_str()) && (table.is_none() || ours.matches(schema, table)))
                    || event.ddl.as_deref().is_some_and(|sql| self.renames_this_table(sql))
            }
            _ => ours.matches(schema, table),
        }
    }

    fn append(&mut self, events: &MessageEvents<'_>, kept: &[usize]) -> FaultResult<()> {
        let start = self.columns.rows();
        let appended = self.append_events(events, kept);
        if appended.is_err() {
            self.columns.truncate(start);
        }
        appended
    }

    fn table_columns(&mut self) -> Option<&mut TableColumns> {
        Some(&mut self.columns)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let stats = &self.columns.stats;
        vec![("dropped_columns", stats.dropped_columns), ("zero_dates", stats.zero_dates)]
    }

    fn append_null(&mut self) {
        self.columns.append_null_row()
    }

    fn finish(&mut self) -> Vec<ArrayRef> {
        self.columns.finish()
    }
}
