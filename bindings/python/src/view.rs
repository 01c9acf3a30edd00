//! `ferry.View`: a validated message read in place. Fields are read when asked for, under
//! their `.proto` names (protobuf's Python names), as attributes or `view["name"]`:
//!
//! | field                    | value                                                      |
//! |--------------------------|------------------------------------------------------------|
//! | integers, enums          | `int` (an enum's number)                                   |
//! | `float`, `double`        | `float`                                                    |
//! | `bool`                   | `bool`                                                     |
//! | `string`                 | `str` (UTF-8 checked when read: `DecodeError` if not)      |
//! | `bytes`                  | a read-only `memoryview` of the received `bytes` (no copy) |
//! | a message                | a `View`, or `None` when absent                            |
//! | `repeated`               | a `list` of the above                                      |
//! | `map<K, V>`              | a `dict`                                                   |
//!
//! An absent scalar reads as its default (`0`, `""`, an empty memoryview, `[]`, `{}`).

use std::sync::{Arc, OnceLock};

use ferry_wire::{Context, DynamicMessage, FieldDesc, Kind, Label, Limits, Outgoing};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyMemoryView, PySlice, PyString};

use crate::errors::{decode_error, encode_error};
use crate::held::{Backing, Held};

/// A validated message, read lazily; it keeps the received `bytes` and the schema alive.
#[pyclass(module = "ferry", frozen)]
pub struct View {
    held: Held,
}

impl View {
    /// Validates `data` as a `message` of `schema`.
    pub(crate) fn decode(
        py: Python<'_>,
        schema: &Arc<ferry_reflect::Schema>,
        message: &str,
        data: Bound<'_, PyBytes>,
        limits: &Limits,
    ) -> PyResult<View> {
        let backing = Arc::new(Backing {
            schema: schema.clone(),
            data: data.unbind(),
            memoryview: OnceLock::new(),
        });
        match Held::decode(py, backing, message, limits) {
            Some(Ok(held)) => Ok(View { held }),
            Some(Err(e)) => Err(decode_error(py, &e)),
            None => Err(crate::errors::SchemaError::new_err(format!(
                "the schema has no message `{message}`"
            ))),
        }
    }

    /// The message re-encoded (canonical bytes: every value copied).
    pub(crate) fn encode(&self, py: Python<'_>) -> PyResult<Vec<u8>> {
        let m = self.dynamic(py)?;
        m.to_vec().map_err(|e| encode_error(py, &[], e))
    }

    /// The message as a `DynamicMessage` (borrowing the view), its strings checked.
    pub(crate) fn dynamic(&self, py: Python<'_>) -> PyResult<DynamicMessage<'_>> {
        DynamicMessage::from_view(&self.held.view(), Context::copy_only()).map_err(|e| decode_error(py, &e))
    }

    /// The schema it was read with.
    pub(crate) fn schema(&self) -> &Arc<ferry_reflect::Schema> {
        &self.held.backing().schema
    }

    /// Its message's full name.
    pub(crate) fn message_name(&self) -> &str {
        self.held.view().desc().name
    }

    fn field(&self, name: &str) -> Option<&FieldDesc<'_>> {
        self.held.view().desc().field_by_name(name)
    }

    /// Field `f`'s value (`as_dict`: nested messages as dicts).
    fn read<'py>(
        &self,
        py: Python<'py>,
        f: &FieldDesc<'_>,
        as_dict: bool,
    ) -> Result<Bound<'py, PyAny>, ReadError> {
        let view = self.held.view();
        let n = f.number;
        // A string that is not UTF-8 below this field: named from this message down.
        let within = |e: ReadError| match e {
            ReadError::Decode(e) => ReadError::Decode(view.within_field(n, e)),
            e => e,
        };
        let value = match (f.kind, f.label) {
            (Kind::Message(d), Label::Repeated) if d.map_entry => {
                let dict = PyDict::new(py);
                for i in 0..view.messages(n).len() {
                    let entry = self.child(|v| v.messages(n).get(i))?;
                    let (Some(k), Some(v)) = (entry.field_by_number(1), entry.field_by_number(2)) else {
                        continue;
                    };
                    let key = entry.read(py, k, as_dict).map_err(within)?;
                    let value = entry.read(py, v, as_dict).map_err(within)?;
                    dict.set_item(key, value)?;
                }
                dict.into_any()
            }
            (Kind::Message(_), Label::Repeated) => {
                let list = PyList::empty(py);
                for i in 0..view.messages(n).len() {
                    let child = self.child(|v| v.messages(n).get(i))?;
                    list.append(child.into_value(py, as_dict).map_err(within)?)?;
                }
                list.into_any()
            }
            (Kind::Message(_), _) => match view.message(n) {
                Some(_) => self
                    .child(|v| v.message(n))?
                    .into_value(py, as_dict)
                    .map_err(within)?,
                None => py.None().into_bound(py),
            },
            (Kind::Bytes, Label::Repeated) => {
                let (whole, base) = self.whole(py)?;
                let items = view.bytes_list(n).iter().map(|b| slice(py, &whole, base, b));
                PyList::new(py, items.collect::<PyResult<Vec<_>>>()?)?.into_any()
            }
            (Kind::String, Label::Repeated) => {
                let list = PyList::empty(py);
                let strings = view.bytes_list(n);
                for s in strings.strs() {
                    match s {
                        Ok(s) => list.append(s)?,
                        // Rust's reader names the error (the first of the message's).
                        Err(_) => return Err(self.first_error()),
                    }
                }
                list.into_any()
            }
            (_, Label::Repeated) => scalars(py, &view, f)?,
            (Kind::Bytes, _) => self.memoryview(py, view.bytes(n).unwrap_or_default())?,
            (Kind::String, _) => match view.str(n) {
                Ok(s) => PyString::new(py, s.unwrap_or_default()).into_any(),
                Err(e) => return Err(ReadError::Decode(e)),
            },
            _ => scalar(py, &view, f)?,
        };
        Ok(value)
    }

    /// The error reading the whole message runs into.
    #[cold]
    fn first_error(&self) -> ReadError {
        match DynamicMessage::from_view(&self.held.view(), Context::copy_only()) {
            Err(e) => ReadError::Decode(e),
            // Unreachable: called when a string of the message is not UTF-8.
            Ok(_) => ReadError::Py(crate::errors::Error::new_err("a string is not UTF-8")),
        }
    }

    fn field_by_number(&self, n: u32) -> Option<&FieldDesc<'_>> {
        self.held.view().desc().field(n)
    }

    /// A nested message `project` picks from this view.
    fn child(
        &self,
        project: impl for<'a> FnOnce(ferry_wire::View<'a>) -> Option<ferry_wire::View<'a>>,
    ) -> Result<View, ReadError> {
        match self.held.project(project) {
            Some(held) => Ok(View { held }),
            // Unreachable: the index or field was just read from the same view.
            None => Err(ReadError::Py(crate::errors::Error::new_err(
                "a nested message vanished",
            ))),
        }
    }

    fn into_value(self, py: Python<'_>, as_dict: bool) -> Result<Bound<'_, PyAny>, ReadError> {
        if as_dict {
            Ok(self.dict(py)?.into_any())
        } else {
            Ok(Bound::new(py, self)?.into_any())
        }
    }

    /// A read-only memoryview of `bytes`, a slice of the received buffer.
    fn memoryview<'py>(&self, py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        let (whole, base) = self.whole(py)?;
        slice(py, &whole, base, bytes)
    }

    /// A memoryview of the whole received buffer (made once per buffer), and its address.
    fn whole<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyMemoryView>, usize)> {
        let backing = self.held.backing();
        let data = backing.data.bind(py);
        let base = data.as_bytes().as_ptr() as usize;
        if let Some(whole) = backing.memoryview.get() {
            return Ok((whole.bind(py).clone(), base));
        }
        let whole = PyMemoryView::from(data.as_any())?;
        Ok((
            backing.memoryview.get_or_init(|| whole.unbind()).bind(py).clone(),
            base,
        ))
    }

    /// The whole message as a dict of its present fields.
    pub(crate) fn to_dict_bound<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.dict(py).map_err(|e| e.into_py(py))
    }

    fn dict<'py>(&self, py: Python<'py>) -> Result<Bound<'py, PyDict>, ReadError> {
        let view = self.held.view();
        let dict = PyDict::new(py);
        for f in view.desc().fields() {
            if view.has(f.number) {
                dict.set_item(f.name, self.read(py, f, true)?)?;
            }
        }
        Ok(dict)
    }

    fn attr(&self, py: Python<'_>, name: &str) -> Option<PyResult<Py<PyAny>>> {
        let f = self.field(name)?;
        Some(
            self.read(py, f, false)
                .map(Bound::unbind)
                .map_err(|e| e.into_py(py)),
        )
    }
}

#[pymethods]
impl View {
    /// Fields first (no failed lookup on the way: attribute reads are the hot path), then the
    /// methods and attributes of the class.
    fn __getattribute__(slf: &Bound<'_, Self>, name: &Bound<'_, PyString>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if let Some(value) = slf.get().attr(py, &name.to_cow()?) {
            return value;
        }
        // `object.__getattribute__`, looked up once.
        static GENERIC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let generic = GENERIC.get_or_try_init(py, || {
            py.get_type::<PyAny>()
                .getattr(intern!(py, "__getattribute__"))
                .map(Bound::unbind)
        })?;
        generic.bind(py).call1((slf, name)).map(Bound::unbind)
    }

    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        self.attr(py, name).unwrap_or_else(|| {
            Err(PyKeyError::new_err(format!(
                "message `{}` has no field `{name}`",
                self.message_name()
            )))
        })
    }

    /// Whether field `name` is present on the wire (protobuf's `HasField`).
    #[pyo3(name = "HasField")]
    fn has_field(&self, name: &str) -> PyResult<bool> {
        match self.field(name) {
            Some(f) => Ok(self.held.view().has(f.number)),
            None => Err(PyValueError::new_err(format!(
                "message `{}` has no field `{name}`",
                self.message_name()
            ))),
        }
    }

    /// The present fields, nested messages as dicts (bytes stay memoryviews).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.to_dict_bound(py)
    }

    /// The message's full name.
    #[getter]
    fn message_type(&self) -> &str {
        self.message_name()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        match self
            .to_dict_bound(py)
            .and_then(|d| d.repr().map(|r| r.to_string()))
        {
            Ok(fields) => format!("<ferry.View {} {fields}>", self.message_name()),
            Err(e) => format!("<ferry.View {} (unreadable: {e})>", self.message_name()),
        }
    }
}

/// The memoryview of `bytes`, which lies in the buffer `whole` views (at address `base`).
fn slice<'py>(
    py: Python<'py>,
    whole: &Bound<'py, PyMemoryView>,
    base: usize,
    bytes: &[u8],
) -> PyResult<Bound<'py, PyAny>> {
    let start = (bytes.as_ptr() as usize).wrapping_sub(base);
    whole.get_item(PySlice::new(
        py,
        start as isize,
        (start + bytes.len()) as isize,
        1,
    ))
}

/// A singular scalar field (its default when absent).
fn scalar<'py>(
    py: Python<'py>,
    view: &ferry_wire::View<'_>,
    f: &FieldDesc<'_>,
) -> PyResult<Bound<'py, PyAny>> {
    let n = f.number;
    Ok(match f.kind {
        Kind::Bool => PyBool::new(py, view.scalar::<bool>(n).unwrap_or_default())
            .to_owned()
            .into_any(),
        Kind::Int32 | Kind::SInt32 | Kind::SFixed32 | Kind::Enum => view
            .scalar::<i32>(n)
            .unwrap_or_default()
            .into_pyobject(py)?
            .into_any(),
        Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => view
            .scalar::<i64>(n)
            .unwrap_or_default()
            .into_pyobject(py)?
            .into_any(),
        Kind::UInt32 | Kind::Fixed32 => view
            .scalar::<u32>(n)
            .unwrap_or_default()
            .into_pyobject(py)?
            .into_any(),
        Kind::UInt64 | Kind::Fixed64 => view
            .scalar::<u64>(n)
            .unwrap_or_default()
            .into_pyobject(py)?
            .into_any(),
        Kind::Float => f64::from(view.scalar::<f32>(n).unwrap_or_default())
            .into_pyobject(py)?
            .into_any(),
        Kind::Double => view
            .scalar::<f64>(n)
            .unwrap_or_default()
            .into_pyobject(py)?
            .into_any(),
        Kind::String | Kind::Bytes | Kind::Message(_) => py.None().into_bound(py),
    })
}

/// A repeated scalar field as a list.
fn scalars<'py>(
    py: Python<'py>,
    view: &ferry_wire::View<'_>,
    f: &FieldDesc<'_>,
) -> PyResult<Bound<'py, PyAny>> {
    let n = f.number;
    Ok(match f.kind {
        Kind::Bool => PyList::new(py, view.scalars::<bool>(n).iter())?.into_any(),
        Kind::Int32 | Kind::SInt32 | Kind::SFixed32 | Kind::Enum => {
            PyList::new(py, view.scalars::<i32>(n).iter())?.into_any()
        }
        Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => {
            PyList::new(py, view.scalars::<i64>(n).iter())?.into_any()
        }
        Kind::UInt32 | Kind::Fixed32 => PyList::new(py, view.scalars::<u32>(n).iter())?.into_any(),
        Kind::UInt64 | Kind::Fixed64 => PyList::new(py, view.scalars::<u64>(n).iter())?.into_any(),
        Kind::Float => PyList::new(py, view.scalars::<f32>(n).iter().map(f64::from))?.into_any(),
        Kind::Double => PyList::new(py, view.scalars::<f64>(n).iter())?.into_any(),
        Kind::String | Kind::Bytes | Kind::Message(_) => PyList::empty(py).into_any(),
    })
}

/// Why a field could not be read: a string that is not UTF-8 (its path is completed on the
/// way up, as Rust's reader does), or a Python error.
enum ReadError {
    Decode(ferry_wire::DecodeError),
    Py(PyErr),
}

impl From<PyErr> for ReadError {
    fn from(e: PyErr) -> ReadError {
        ReadError::Py(e)
    }
}

impl ReadError {
    fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            ReadError::Decode(e) => decode_error(py, &e),
            ReadError::Py(e) => e,
        }
    }
}
