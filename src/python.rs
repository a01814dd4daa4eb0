//! The private native module `ticdc_rs._ticdc_rs`: a few lines of glue per binding.
//!
//! Arrow crosses the boundary only through the Arrow PyCapsule interface (pyo3-arrow); batches
//! are decoded with the GIL released. [`to_py_err`] is the one place a Rust error becomes a
//! Python exception (usage errors the glue finds itself go through [`usage`]). The public API, its defaults and the Spark/Polars adapters live in Python.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::create_exception;
use pyo3::exceptions::{PyNotImplementedError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::{PyField, PyRecordBatch, PySchema};

use crate::arrow::{infer, LayoutOptions};
use crate::codec::simple::TableSchema;
use crate::error::Error;
use crate::schema::TableName;
use crate::{BatchDecoder, BatchEncoder, Compression, DecodeOptions, EncodeOptions, OnError, Protocol};

create_exception!(_ticdc_rs, DecodeError, PyValueError, "A message could not be decoded.");
create_exception!(_ticdc_rs, EncodeError, PyValueError, "A batch could not be encoded.");
create_exception!(
    _ticdc_rs,
    UsageError,
    PyValueError,
    "The call is wrong as a whole: an unknown option or option value, or an input batch without \
     the columns it needs or with columns of the wrong type."
);

/// The one place a Rust error becomes a Python exception.
fn to_py_err(py: Python<'_>, e: Error) -> PyErr {
    match e {
        Error::Decode(e) => {
            let err = DecodeError::new_err(e.to_string());
            let value = err.value(py);
            // Setting plain attributes on a fresh exception cannot fail in practice; if it did,
            // the exception would still carry the full message.
            let _ = value.setattr("protocol", e.protocol);
            let _ = value.setattr("message_index", e.message_index);
            let _ = value.setattr("offset", e.offset);
            let _ = value.setattr("reason", e.reason);
            err
        }
        Error::Encode(e) => {
            let err = EncodeError::new_err(e.to_string());
            let value = err.value(py);
            let _ = value.setattr("protocol", e.protocol);
            let _ = value.setattr("row", e.row);
            let _ = value.setattr("reason", e.reason);
            err
        }
        Error::Usage(e) if e.reason.ends_with("is not supported yet") => PyNotImplementedError::new_err(e.reason),
        Error::Usage(e) => UsageError::new_err(e.to_string()),
        Error::Internal(e) => PyRuntimeError::new_err(e.to_string()),
    }
}

/// A usage error of the glue itself (options it parses before the Rust API sees them).
fn usage(reason: impl Into<String>) -> PyErr {
    UsageError::new_err(reason.into())
}

fn parse<T>(what: &str, value: &str, f: impl Fn(&str) -> Option<T>) -> PyResult<T> {
    f(value).ok_or_else(|| usage(format!("unknown {what} {value:?}")))
}

fn protocol(name: Option<&str>) -> PyResult<Option<Protocol>> {
    name.filter(|n| *n != "auto").map(|n| parse("protocol", n, Protocol::from_name)).transpose()
}

fn table_name(table: &str) -> PyResult<TableName> {
    TableName::parse(table).ok_or_else(|| usage(format!("table must be \"db.table\", got {table:?}")))
}

#[pyclass(module = "ticdc_rs._ticdc_rs")]
struct NativeDecoder {
    inner: BatchDecoder,
}

#[pymethods]
impl NativeDecoder {
    #[new]
    #[pyo3(signature = (protocol, layout, table, schema, on_error, compression, claim_check_dir,
                        timezone, key_column, value_column, carry, verify_checksum, max_pending,
                        table_schemas))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        protocol: Option<&str>,
        layout: &str,
        table: Option<&str>,
        schema: Option<PySchema>,
        on_error: &str,
        compression: &str,
        claim_check_dir: Option<PathBuf>,
        timezone: &str,
        key_column: &str,
        value_column: &str,
        carry: Vec<PyField>,
        verify_checksum: bool,
        max_pending: usize,
        table_schemas: Vec<String>,
    ) -> PyResult<Self> {
        let layout = match (layout, table, schema) {
            ("envelope", _, _) => LayoutOptions::Envelope,
            ("typed", Some(table), Some(schema)) => {
                LayoutOptions::Typed { table: table_name(table)?, schema: schema.into_inner() }
            }
            ("typed", _, _) => return Err(usage("layout=\"typed\" needs table= and schema=")),
            (other, _, _) => {
                return Err(usage(format!("unknown layout {other:?}; expected \"envelope\" or \"typed\"")))
            }
        };
        let options = DecodeOptions {
            protocol: crate::python::protocol(protocol)?,
            layout,
            on_error: parse("on_error", on_error, OnError::parse)?,
            compression: parse("compression", compression, Compression::parse)?,
            claim_check_dir,
            timezone: timezone.to_string(),
            key_column: key_column.to_string(),
            value_column: value_column.to_string(),
            carry: carry.into_iter().map(|f| f.into_inner()).collect(),
            verify_checksum,
            max_pending,
            table_schemas: table_schemas_of(&table_schemas)?,
        };
        let inner = BatchDecoder::new(options).map_err(|e| to_py_err(py, e))?;
        Ok(NativeDecoder { inner })
    }

    #[getter]
    fn schema(&self) -> PySchema {
        PySchema::new(self.inner.schema())
    }

    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (k, v) in self.inner.stats() {
            dict.set_item(k, v)?;
        }
        Ok(dict)
    }

    fn decode(&mut self, py: Python<'_>, batch: PyRecordBatch) -> PyResult<PyRecordBatch> {
        let batch = batch.into_inner();
        let inner = &mut self.inner;
        let out = py.detach(|| inner.decode(&batch)).map_err(|e| to_py_err(py, e))?;
        Ok(PyRecordBatch::new(out))
    }

    /// End of stream: messages still waiting for a schema become errors per `on_error`.
    fn flush(&mut self, py: Python<'_>) -> PyResult<PyRecordBatch> {
        let inner = &mut self.inner;
        let out = py.detach(|| inner.flush()).map_err(|e| to_py_err(py, e))?;
        Ok(PyRecordBatch::new(out))
    }
}

#[pyclass(module = "ticdc_rs._ticdc_rs")]
struct NativeEncoder {
    inner: BatchEncoder,
}

#[pymethods]
impl NativeEncoder {
    /// `options`: TiCDC sink option names with their values as text.
    #[new]
    fn new(py: Python<'_>, protocol: &str, options: Vec<(String, String)>) -> PyResult<Self> {
        let protocol = parse("protocol", protocol, Protocol::from_name)?;
        let mut parsed = EncodeOptions::default();
        for (name, value) in &options {
            parsed.set(name, value).map_err(usage)?;
        }
        let inner = BatchEncoder::new(protocol, parsed).map_err(|e| to_py_err(py, e))?;
        Ok(NativeEncoder { inner })
    }

    #[getter]
    fn schema(&self) -> PySchema {
        PySchema::new(self.inner.schema())
    }

    fn encode(&mut self, py: Python<'_>, batch: PyRecordBatch) -> PyResult<PyRecordBatch> {
        let batch = batch.into_inner();
        let inner = &mut self.inner;
        let out = py.detach(|| inner.encode(&batch)).map_err(|e| to_py_err(py, e))?;
        Ok(PyRecordBatch::new(out))
    }
}

fn table_schemas_of(texts: &[String]) -> PyResult<Vec<TableSchema>> {
    texts.iter().map(|t| TableSchema::from_json(t).map_err(|e| usage(format!("table_schemas: {e}")))).collect()
}

#[pyfunction]
#[pyo3(signature = (batches, protocol, table, compression, key_column, value_column, table_schemas))]
#[allow(clippy::too_many_arguments)]
fn infer_schema(
    py: Python<'_>,
    batches: Vec<PyRecordBatch>,
    protocol: Option<&str>,
    table: &str,
    compression: &str,
    key_column: &str,
    value_column: &str,
    table_schemas: Vec<String>,
) -> PyResult<PySchema> {
    let batches: Vec<_> = batches.into_iter().map(PyRecordBatch::into_inner).collect();
    let protocol = crate::python::protocol(protocol)?;
    let table = table_name(table)?;
    let compression = parse("compression", compression, Compression::parse)?;
    let known = table_schemas_of(&table_schemas)?;
    let schema = py
        .detach(|| infer::infer_schema(&batches, protocol, &table, compression, value_column, key_column, &known))
        .map_err(|e| to_py_err(py, e))?;
    Ok(PySchema::new(Arc::new(schema)))
}

/// The typed schema of a Simple-protocol `tableSchema` JSON text.
#[pyfunction]
fn schema_from_table_schema(text: &str) -> PyResult<PySchema> {
    let schema = TableSchema::from_json(text).map_err(|e| usage(format!("not a table schema: {e}")))?;
    Ok(PySchema::new(Arc::new(schema.definition().arrow_schema())))
}

/// The typed schema of a `CREATE TABLE` statement (MySQL/TiDB dialect), or of a DDL script: its
/// first `CREATE TABLE` and the `ALTER TABLE`s of that table after it.
#[pyfunction]
fn schema_from_ddl(sql: &str) -> PyResult<PySchema> {
    let definition = crate::schema::ddl::parse_ddl_script(sql).map_err(usage)?;
    Ok(PySchema::new(Arc::new(definition.arrow_schema())))
}

#[pymodule]
fn _ticdc_rs(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DecodeError", m.py().get_type::<DecodeError>())?;
    m.add("EncodeError", m.py().get_type::<EncodeError>())?;
    m.add("UsageError", m.py().get_type::<UsageError>())?;
    m.add_class::<NativeDecoder>()?;
    m.add_class::<NativeEncoder>()?;
    m.add_function(wrap_pyfunction!(infer_schema, m)?)?;
    m.add_function(wrap_pyfunction!(schema_from_ddl, m)?)?;
    m.add_function(wrap_pyfunction!(schema_from_table_schema, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
