//! From Arrow batches of events to Kafka records: the encoding driver.
//!
//! [`BatchEncoder`] reads a batch in either output layout back into events ([`super::rows`]),
//! hands them to the protocol's [`Encode`]r in row order and returns the records as a
//! `key`/`value` batch. Batching protocols fill messages across the rows of one input batch and
//! complete the last one at the batch's end, so each output batch stands on its own.

use std::sync::Arc;

use arrow_array::builder::BinaryBuilder;
use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::rows::read_events;
use super::ServerZone;
use crate::codec::{Encode, EncodeOptions, Protocol, Record};
use crate::error::{EncodeError, Error};
use crate::event::MessageEvents;

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
        let encoder = protocol
            .encoder(&options)
            .ok_or_else(|| Error::usage(name, format!("encoding {name} is not supported yet")))?;
        let schema = Arc::new(Schema::new(vec![
            Field::new("key", DataType::Binary, true),
            Field::new("value", DataType::Binary, false),
        ]));
        Ok(BatchEncoder { protocol, encoder, zone, schema })
    }

    /// `key` (binary, null but for `open`) and `value` (binary).
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Encodes every event row of `batch` (ERROR rows are left out).
    pub fn encode(&mut self, batch: &RecordBatch) -> Result<RecordBatch, Error> {
        let name = self.protocol.name();
        let mut events = MessageEvents::default();
        let mut rows = Vec::new();
        read_events(batch, self.zone, &mut events, &mut rows).map_err(|e| Error::usage(name, e))?;
        let mut records = Vec::new();
        for (event, &row) in events.events.iter().zip(&rows) {
            self.encoder
                .encode(&events, event, &mut records)
                .map_err(|f| EncodeError::at_row(name, row, f))?;
        }
        self.encoder.flush(&mut records).map_err(|f| EncodeError::at_end(name, f))?;
        self.to_batch(&records)
    }

    fn to_batch(&self, records: &[Record]) -> Result<RecordBatch, Error> {
        let bytes: usize = records.iter().map(|r| r.value.len()).sum();
        let mut keys = BinaryBuilder::with_capacity(records.len(), 0);
        let mut values = BinaryBuilder::with_capacity(records.len(), bytes);
        for r in records {
            keys.append_option(r.key.as_deref());
            values.append_value(&r.value);
        }
        RecordBatch::try_new(self.schema.clone(), vec![Arc::new(keys.finish()), Arc::new(values.finish())])
            .map_err(|e| Error::internal(self.protocol.name(), e))
    }
}
