//! A minimal blocking Kafka client over our own codec (`protocol`), for the few admin requests that
//! rust-rdkafka does not expose: ApiVersions (per-broker version ranges), Metadata's controller id,
//! IncrementalAlterConfigs and OffsetFetch for every partition of a group.
//!
//! One request is in flight per connection. A connection is secured as the command's client properties
//! say ([`crate::security::wire_connector`]: TLS, a SASL login) and driven by its own current-thread tokio
//! runtime. Every operation is bounded by the connection's timeout; every response frame is bounded by
//! [`protocol::MAX_FRAME_SIZE`] bytes. The version of
//! each request is the highest one both this codec and the broker support (from ApiVersions v0,
//! which every Kafka broker answers), optionally capped by the caller.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use bytes::Bytes;
use protocol::messages::ApiVersionsRequest;
use protocol::{
    decode_response, encode_request, supported_versions, ApiKey, RequestBody, RequestHeader,
    ResponseBody,
};
use replica::transport::BoxedStream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::client::ConnArgs;

/// Calls API `$api` (a `RequestBody`/`ResponseBody` variant name) with `$request` at the highest version
/// both sides support up to `$cap`, and yields the response message; fails with "unexpected response to
/// $api" when the broker answers another API (and with `Wire::call`'s errors).
macro_rules! call_api {
    ($wire:expr, $api:ident, $request:expr, $cap:expr) => {{
        let (_, resp) = $wire.call(protocol::RequestBody::$api($request), $cap)?;
        match resp {
            protocol::ResponseBody::$api(r) => r,
            _ => anyhow::bail!(concat!("unexpected response to ", stringify!($api))),
        }
    }};
}
pub(crate) use call_api;

/// A connection to one broker with its advertised API version ranges.
pub struct Wire {
    runtime: tokio::runtime::Runtime,
    stream: BoxedStream,
    timeout: Duration,
    addr: String,
    next_correlation_id: i32,
    /// API key → (min, max) as advertised by the broker.
    pub versions: BTreeMap<i16, (i16, i16)>,
}

/// Opens a TCP connection to the first reachable address of `host:port`, bounded by `timeout`.
pub fn connect_tcp(addr: &str, timeout: Duration) -> anyhow::Result<TcpStream> {
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .with_context(|| format!("resolving {addr}"))?
        .collect();
    let mut last = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => anyhow!("cannot connect to {addr}: {e}"),
        None => anyhow!("{addr} resolves to no address"),
    })
}

impl Wire {
    /// Connects to `addr` (`host:port`) secured as `conn`'s client properties say, and asks for its API
    /// versions. Errors: unreachable, a failed TLS handshake or SASL login, a timeout.
    pub fn connect(addr: &str, conn: &ConnArgs) -> anyhow::Result<Wire> {
        let timeout = conn.timeout();
        let connector = crate::security::wire_connector(&conn.client_properties()?)?;
        let (host, port) = split_host_port(addr)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let stream = bounded(&runtime, timeout, connector.connect(&host, port))
            .with_context(|| format!("connecting to {addr}"))?
            .map_err(|e| anyhow!("cannot connect to {addr}: {e}"))?;
        let mut w = Wire {
            runtime,
            stream,
            timeout,
            addr: addr.to_string(),
            next_correlation_id: 1,
            versions: BTreeMap::new(),
        };
        let ResponseBody::ApiVersions(resp) = w.call_version(
            ApiKey::ApiVersions,
            0,
            RequestBody::ApiVersions(ApiVersionsRequest::default()),
        )?
        else {
            bail!("{addr}: unexpected response to ApiVersions");
        };
        if resp.error_code != 0 {
            bail!(
                "{addr}: ApiVersions failed: {}",
                protocol::error::ErrorCode(resp.error_code).name()
            );
        }
        w.versions = resp
            .api_keys
            .iter()
            .map(|k| (k.api_key, (k.min_version, k.max_version)))
            .collect();
        Ok(w)
    }

    /// Connects to the first reachable broker of `conn`'s bootstrap list.
    pub fn connect_any(conn: &ConnArgs) -> anyhow::Result<Wire> {
        let mut errors = Vec::new();
        for addr in conn.addrs() {
            match Wire::connect(addr, conn) {
                Ok(w) => return Ok(w),
                Err(e) => errors.push(format!("{e:#}")),
            }
        }
        bail!("{}", errors.join("; "))
    }

    /// The broker address this connection talks to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The version to use for `api`: the highest both sides support, at most `cap`.
    /// Errors naming the API when there is none.
    pub fn version(&self, api: ApiKey, cap: i16) -> anyhow::Result<i16> {
        let (ours_min, ours_max) =
            supported_versions(api).ok_or_else(|| anyhow!("{api} is not implemented"))?;
        let (theirs_min, theirs_max) = *self.versions.get(&(api as i16)).ok_or_else(|| {
            anyhow!(
                "the broker at {} does not support the {api} API (key {})",
                self.addr,
                api as i16
            )
        })?;
        let v = ours_max.min(theirs_max).min(cap);
        if v < ours_min.max(theirs_min) {
            bail!(
                "no common version of {api}: the broker at {} supports {theirs_min}-{theirs_max}, runnel {ours_min}-{}",
                self.addr,
                ours_max.min(cap)
            );
        }
        Ok(v)
    }

    /// Sends `body` in the highest common version (at most `cap`) and returns the version used and
    /// the decoded response.
    pub fn call(&mut self, body: RequestBody, cap: i16) -> anyhow::Result<(i16, ResponseBody)> {
        let api = body.api_key();
        let v = self.version(api, cap)?;
        Ok((v, self.call_version(api, v, body)?))
    }

    fn call_version(
        &mut self,
        api: ApiKey,
        version: i16,
        body: RequestBody,
    ) -> anyhow::Result<ResponseBody> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let header = RequestHeader {
            request_api_key: api as i16,
            request_api_version: version,
            correlation_id,
            client_id: Some("runnel-cli".into()),
            unknown_tagged_fields: vec![],
        };
        let frame = encode_request(&header, &body).map_err(|e| anyhow!("encoding {api}: {e}"))?;
        let addr = self.addr.clone();
        let stream = &mut self.stream;
        let exchange = async move {
            stream.write_all(&frame).await?;
            stream.flush().await?; // over TLS the last records may still be buffered
            let size = stream.read_i32().await?;
            if size < 4 || size as usize > protocol::MAX_FRAME_SIZE {
                return Err(std::io::Error::other(format!(
                    "bad response frame size {size}"
                )));
            }
            let mut buf = vec![0u8; size as usize];
            stream.read_exact(&mut buf).await?;
            Ok(buf)
        };
        let buf = bounded(&self.runtime, self.timeout, exchange)
            .with_context(|| format!("waiting for the {api} response from {addr}"))?
            .with_context(|| format!("{api} with {addr}"))?;
        let (h, body) = decode_response(api, version, Bytes::from(buf))
            .map_err(|e| anyhow!("{addr}: undecodable {api} v{version} response: {e}"))?;
        if h.correlation_id != correlation_id {
            bail!(
                "{addr}: {api} response has correlation id {}, expected {correlation_id}",
                h.correlation_id
            );
        }
        Ok(body)
    }
}

/// Runs `f` on `runtime`, failing after `timeout`.
fn bounded<F: Future>(
    runtime: &tokio::runtime::Runtime,
    timeout: Duration,
    f: F,
) -> anyhow::Result<F::Output> {
    runtime
        .block_on(async { tokio::time::timeout(timeout, f).await })
        .map_err(|_| anyhow!("timed out after {timeout:?}"))
}

/// `host:port` (or `[v6]:port`) split into its host and port.
fn split_host_port(addr: &str) -> anyhow::Result<(String, u16)> {
    let (host, port) = addr
        .rsplit_once(':')
        .ok_or_else(|| anyhow!("{addr}: expected HOST:PORT"))?;
    let port = port
        .parse()
        .map_err(|_| anyhow!("{addr}: bad port {port:?}"))?;
    Ok((
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port,
    ))
}
