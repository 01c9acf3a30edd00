//! `ferry.Channel`: the blocking `ferry-rpc` client, calling methods by their full name with
//! requests already encoded (`MessageType.encode`), the GIL released while it waits.

use std::time::Duration;

use ferry_rpc::{CallOptions, Code, Metadata, Status};
use ferry_transport::{Payload, Received, method_id};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::rpc_error;
use crate::held::Unsync;
use crate::schema::MessageType;

/// One connection to a Ferry RPC server (`tcp://HOST:PORT` or `shm:///PATH`); one call at a
/// time. It belongs to the thread that made it (a shared-memory connection's memory is mapped
/// for that thread's use): another thread gets an error.
#[pyclass(module = "ferry", unsendable)]
pub struct Channel {
    inner: ferry_rpc::Channel,
}

#[pymethods]
impl Channel {
    /// Connects (`UNAVAILABLE` if the server cannot be reached, `INVALID_ARGUMENT` for an
    /// address that does not parse).
    #[new]
    fn new(py: Python<'_>, addr: &str) -> PyResult<Channel> {
        let connected = py.detach(|| ferry_rpc::Channel::connect(addr).map(Unsync));
        match connected {
            Ok(Unsync(inner)) => Ok(Channel { inner }),
            Err(s) => Err(rpc_error(py, &s)),
        }
    }

    /// Calls `method` (`/pkg.Service/Method`) with `request` (encoded bytes) and waits for the
    /// response: its bytes, or with `response` (a MessageType) a view of it. `timeout` in
    /// seconds; `metadata` a dict of str to str or bytes. A failed call raises
    /// `ferry.RpcError` with the status's code.
    #[pyo3(signature = (method, request, *, response = None, timeout = None, metadata = None))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        method: &str,
        request: &[u8],
        response: Option<&MessageType>,
        timeout: Option<f64>,
        metadata: Option<Vec<(String, Vec<u8>)>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut options = CallOptions::default();
        if let Some(t) = timeout {
            let t = Duration::try_from_secs_f64(t).map_err(|e| {
                rpc_error(
                    py,
                    &Status::new(Code::InvalidArgument, format!("timeout {t}: {e}")),
                )
            })?;
            options.timeout = Some(t);
        }
        let mut md = Metadata::default();
        for (key, value) in metadata.unwrap_or_default() {
            md.append(&key, value)
                .map_err(|e| rpc_error(py, &Status::new(Code::InvalidArgument, e.to_string())))?;
        }
        options.metadata = md;
        let id = method_id(method);
        let channel = Unsync(&self.inner);
        let answer = py.detach(move || {
            let channel = channel;
            Unsync(channel.0.call_payload_with(id, Payload::Bytes(request), &options))
        });
        let frame = match answer.0 {
            Ok(r) => r,
            Err(s) => return Err(rpc_error(py, &s)),
        };
        let frame = frame.frame();
        match (response, frame.bytes()) {
            (None, Some(bytes)) => Ok(PyBytes::new(py, bytes).into_any()),
            (Some(ty), Some(bytes)) => {
                Ok(Bound::new(py, ty.decode_bytes(py, PyBytes::new(py, bytes))?)?.into_any())
            }
            // A Ferry message left in the server's shared memory: read it there, copy it out.
            (Some(ty), None) => {
                let bytes = ty.reencode(py, |desc, limits| frame.view(desc, limits))?;
                Ok(Bound::new(py, ty.decode_bytes(py, PyBytes::new(py, &bytes))?)?.into_any())
            }
            (None, None) => Err(rpc_error(
                py,
                &Status::new(
                    Code::Internal,
                    format!(
                        "the response of {method} is a Ferry message in shared memory: pass response=its MessageType"
                    ),
                ),
            )),
        }
    }
}
