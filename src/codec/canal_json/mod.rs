//! Canal-JSON (`../shared/protocols/canal-json.md`), decoder and encoder: one JSON object per
//! Kafka message in Canal's `FlatMessage` shape, with TiCDC's `_tidb` extension.

mod decode;
mod encode;

pub use decode::CanalJsonCodec;
pub use encode::CanalJsonEncoder;
