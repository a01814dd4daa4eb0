//! From Arrow batches of events to Kafka records: the encoding driver.
//!
//! [`BatchEncoder`] reads a batch in either output layout back into events ([`super::read_events`]),
//! hands them to the protocol's [`Encode`]r in row order and returns the records as a
//! `key`/`value` batch. Batching protocols fill messages across the rows of one input batch and
//! complete the last one at the batch's end, so each output batch stands on its own.
//!
//! When the input carries Kafka's placement (a `_partition` and/or `_topic` column, as a decoder
//! carries them), rows are encoded per destination, as TiCDC's Kafka sink does: it groups each
//! batch of row events by `TopicPartitionKey` and builds every group's messages with an encoder
//! of their own (`downstreamadapter/sink/kafka/sink.go`: `group`, then `encoderGroup.AddEvents`;
//! `pkg/sink/codec/encoder_group.go`: `AppendRowChangedEvent` per event, then `Build`). So a
//! message never mixes partitions, `max_batch_size` and `max_message_bytes` apply within one
//! partition's run of rows, and each partition's rows keep their order. Groups are written in the
//! order their first row appears. The output then carries each record's `partition` (int32, the
//! column Spark's Kafka sink reads) and `topic` (utf8).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int32Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::read_events::read_events;
use crate::codec::{Destination, Encode, EncodeOptions, Record};
use crate::error::{EncodeError, Error, Fault};
use crate::event::MessageEvents;
use crate::input::Protocol;
use crate::schema::ServerZone;

/// The input column whose value names a row's Kafka partition.
pub const PARTITION_COLUMN: &str = "_partition";
/// The input column whose value names a row's Kafka topic.
pub const TOPIC_COLUMN: &str = "_topic";

pub struct BatchEncoder {
    protocol: Protocol,
    encoder: Box<dyn Encode>,
    zone: ServerZone,
    schema: SchemaRef,
}

impl BatchEncoder {
    pub fn new(protocol: Protocol, options: EncodeOptions) -> Result<BatchEncoder, Error> {
        let name = protocol.name();
        let zone = ServerZone::parse(&options.timezone)
            .ok_or_else(|| Error::usage(name, format!("unknown time zone {:?}", options.timezone)))?;
        if options.simple_include_start_ts && protocol != Protocol::SimpleJson {
            // TiCDC rejects the option for other protocols and for Simple's Avro encoding.
            return Err(Error::usage(name, "simple_include_start_ts is for simple-json only"));
        }
        let encoder = protocol
            .encoder(&options)
            .ok_or_else(|| Error::usage(name, format!("encoding {name} is not supported yet")))?;
        let schema = Arc::new(Schema::new(vec![
            Field::new("key", DataType::Binary, true),
            Field::new("value", DataType::Binary, false),
        ]));
        Ok(BatchEncoder { protocol, encoder, zone, schema })
    }

    /// `key` (binary, null but for `open`) and `value` (binary): the output of input without
    /// `_topic` / `_partition` columns.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The output schema for input of schema `input`: `key`, `value`, then `topic` (utf8) if the
    /// input has `_topic` and `partition` (int32) if it has `_partition`.
    pub fn output_schema(&self, input: &Schema) -> SchemaRef {
        let topic = input.column_with_name(TOPIC_COLUMN).is_some();
        let partition = input.column_with_name(PARTITION_COLUMN).is_some();
        if !topic && !partition {
            return self.schema.clone();
        }
        let mut fields: Vec<Field> = self.schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        if topic {
            fields.push(Field::new("topic", DataType::Utf8, true));
        }
        if partition {
            fields.push(Field::new("partition", DataType::Int32, true));
        }
        Arc::new(Schema::new(fields))
    }

    /// Encodes every event row of `batch` (ERROR rows are left out), per Kafka partition when
    /// the batch carries `_partition` / `_topic`.
    pub fn encode(&mut self, batch: &RecordBatch) -> Result<RecordBatch, Error> {
        let name = self.protocol.name();
        let mut events = MessageEvents::default();
        let mut rows = Vec::new();
        read_events(batch, self.zone, &mut events, &mut rows).map_err(|e| Error::usage(name, e))?;
        let topics = self.placement_column(batch, TOPIC_COLUMN, DataType::Utf8)?;
        let partitions = self.placement_column(batch, PARTITION_COLUMN, DataType::Int64)?;
        let mut records = Vec::new();
        if topics.is_none() && partitions.is_none() {
            self.encoder.set_destination(&(None, None));
            for (event, &row) in events.events.iter().zip(&rows) {
                self.encoder.encode(&events, event, &mut records).map_err(|f| EncodeError::at_row(name, row, f))?;
            }
            self.encoder.flush(&mut records).map_err(|f| EncodeError::at_end(name, f))?;
            return self.to_batch(&records, None, batch.schema_ref());
        }
        // Each destination's events in row order; destinations in order of first appearance.
        let mut groups: Vec<(Destination, Vec<usize>)> = Vec::new();
        let mut index: HashMap<Destination, usize> = HashMap::new();
        for (i, &row) in rows.iter().enumerate() {
            let topic = topics.as_ref().and_then(|a| {
                let a = a.as_string::<i32>();
                a.is_valid(row).then(|| a.value(row).to_owned())
            });
            let partition = match partitions.as_ref().map(|a| a.as_primitive::<Int64Type>()) {
                Some(a) if a.is_valid(row) => Some(i32::try_from(a.value(row)).map_err(|_| {
                    EncodeError::at_row(name, row, Fault::new(0, format!("partition {} is not an int32", a.value(row))))
                })?),
                _ => None,
            };
            let key = (topic, partition);
            let g = *index.entry(key.clone()).or_insert_with(|| {
                groups.push((key, Vec::new()));
                groups.len() - 1
            });
            groups[g].1.push(i);
        }
        let mut placed: Vec<(usize, &Destination)> = Vec::with_capacity(groups.len());
        for (destination, members) in &groups {
            self.encoder.set_destination(destination);
            for &i in members {
                self.encoder
                    .encode(&events, &events.events[i], &mut records)
                    .map_err(|f| EncodeError::at_row(name, rows[i], f))?;
            }
            self.encoder.flush(&mut records).map_err(|f| Error::usage(name, f.reason))?;
            placed.push((records.len(), destination));
        }
        self.to_batch(&records, Some(&placed), batch.schema_ref())
    }

    /// `batch`'s column `column` cast to `to`, if it has one.
    fn placement_column(&self, batch: &RecordBatch, column: &str, to: DataType) -> Result<Option<ArrayRef>, Error> {
        let Some(array) = batch.column_by_name(column) else {
            return Ok(None);
        };
        arrow_cast::cast(array, &to).map(Some).map_err(|e| {
            Error::usage(
                self.protocol.name(),
                format!("column {column} ({}) cannot be read as {to}: {e}", array.data_type()),
            )
        })
    }

    /// The records as a batch; `placed` lists, per destination, the end of its run of records.
    fn to_batch(
        &self,
        records: &[Record],
        placed: Option<&[(usize, &Destination)]>,
        input: &Schema,
    ) -> Result<RecordBatch, Error> {
        let bytes: usize = records.iter().map(|r| r.value.len()).sum();
        let mut keys = BinaryBuilder::with_capacity(records.len(), 0);
        let mut values = BinaryBuilder::with_capacity(records.len(), bytes);
        for r in records {
            keys.append_option(r.key.as_deref());
            values.append_value(&r.value);
        }
        let mut columns: Vec<ArrayRef> = vec![Arc::new(keys.finish()), Arc::new(values.finish())];
        let schema = self.output_schema(input);
        if let Some(placed) = placed {
            let mut topics = StringBuilder::with_capacity(records.len(), 0);
            let mut partitions = Int32Builder::with_capacity(records.len());
            let mut start = 0;
            for &(end, (topic, partition)) in placed {
                for _ in start..end {
                    topics.append_option(topic.as_deref());
                    partitions.append_option(*partition);
                }
                start = end;
            }
            if schema.column_with_name("topic").is_some() {
                columns.push(Arc::new(topics.finish()));
            }
            if schema.column_with_name("partition").is_some() {
                columns.push(Arc::new(partitions.finish()));
            }
        }
        RecordBatch::try_new(schema, columns).map_err(|e| Error::internal(self.protocol.name(), e))
    }
}
