//! Kafka wire protocol codec. No I/O: everything here works on byte buffers.

pub mod record;
