//! `ferry.Schema` (`.proto` files loaded at run time) and `ferry.MessageType` (one message of
//! it: encode, decode, JSON).

use std::path::PathBuf;
use std::sync::Arc;

use ferry_reflect::json;
use ferry_wire::{Context, DecodeError, DynamicMessage, Kind, Label, Limits, MessageDesc, Outgoing};
use prost_reflect::MessageDescriptor;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::errors::{SchemaError, decode_error, encode_error};
use crate::view::View;

/// `.proto` files parsed at run time (no `protoc`); Google's well-known types are always
/// importable.
#[pyclass(module = "ferry", frozen)]
pub struct Schema {
    inner: Arc<ferry_reflect::Schema>,
}

#[pymethods]
impl Schema {
    /// Parses `paths` (and what they import, searched in `includes`).
    #[staticmethod]
    #[pyo3(signature = (paths, includes = Vec::new()))]
    fn load(py: Python<'_>, paths: Vec<PathBuf>, includes: Vec<PathBuf>) -> PyResult<Schema> {
        let schema = py.detach(|| ferry_reflect::Schema::load(&paths, &includes));
        match schema {
            Ok(s) => Ok(Schema { inner: Arc::new(s) }),
            Err(e) => Err(SchemaError::new_err(e.to_string())),
        }
    }

    /// The message type `name` (`pkg.Outer.Inner`).
    fn message(&self, name: &str) -> PyResult<MessageType> {
        MessageType::new(&self.inner, name)
    }

    /// The full names of every message of the schema (and of the files it imports), sorted.
    fn messages(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .inner
            .pool()
            .all_messages()
            .map(|m| m.full_name().to_owned())
            .collect();
        names.sort();
        names
    }

    fn __repr__(&self) -> String {
        format!(
            "<ferry.Schema of {} messages>",
            self.inner.pool().all_messages().count()
        )
    }
}

/// One message of a schema.
#[pyclass(module = "ferry", frozen)]
pub struct MessageType {
    schema: Arc<ferry_reflect::Schema>,
    descriptor: MessageDescriptor,
}

impl MessageType {
    pub(crate) fn new(schema: &Arc<ferry_reflect::Schema>, name: &str) -> PyResult<MessageType> {
        match schema.descriptor(name) {
            Some(descriptor) => Ok(MessageType {
                schema: schema.clone(),
                descriptor,
            }),
            None => Err(SchemaError::new_err(format!(
                "the schema has no message `{name}`"
            ))),
        }
    }

    fn desc(&self) -> &MessageDesc<'_> {
        self.schema
            .message(self.descriptor.full_name())
            .expect("every message of the pool has a descriptor")
    }

    /// `message` (a dict, a `View` of this type, or None with `fields`) encoded.
    pub(crate) fn encode_bytes(
        &self,
        py: Python<'_>,
        message: Option<&Bound<'_, PyAny>>,
        fields: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Vec<u8>> {
        if let Some(view) = message.and_then(|m| m.cast::<View>().ok()) {
            let view = view.get();
            if fields.is_some_and(|f| !f.is_empty()) || view.message_name() != self.descriptor.full_name() {
                return Err(encode_error(
                    py,
                    &[],
                    format!(
                        "expected a {} (a dict or a view of one), found a view of {}",
                        self.descriptor.full_name(),
                        view.message_name()
                    ),
                ));
            }
            return view.encode(py);
        }
        let message = match (message, fields) {
            (Some(m), None) => m.clone(),
            (None, Some(f)) => f.clone().into_any(),
            (None, None) => PyDict::new(py).into_any(),
            (Some(_), Some(_)) => {
                return Err(encode_error(
                    py,
                    &[],
                    "give a dict or keyword arguments, not both",
                ));
            }
        };
        let m = crate::encode::message(py, &self.descriptor, self.desc(), &message, &mut Vec::new())?;
        m.to_vec().map_err(|e| encode_error(py, &[], e))
    }

    /// Validates `data` as this message.
    pub(crate) fn decode_bytes(&self, py: Python<'_>, data: Bound<'_, PyBytes>) -> PyResult<View> {
        View::decode(
            py,
            &self.schema,
            self.descriptor.full_name(),
            data,
            &Limits::default(),
        )
    }

    /// The canonical bytes of the message `read` validates with this type's descriptor.
    pub(crate) fn reencode<'s>(
        &'s self,
        py: Python<'_>,
        read: impl FnOnce(&'s MessageDesc<'s>, &Limits) -> Result<ferry_wire::View<'s>, DecodeError>,
    ) -> PyResult<Vec<u8>> {
        let view = read(self.desc(), &Limits::default()).map_err(|e| decode_error(py, &e))?;
        let m = DynamicMessage::from_view(&view, Context::copy_only()).map_err(|e| decode_error(py, &e))?;
        m.to_vec().map_err(|e| encode_error(py, &[], e))
    }
}

#[pymethods]
impl MessageType {
    /// Encodes a dict (or keyword arguments, or a view of this type) as Ferry wire bytes.
    #[pyo3(signature = (message = None, **fields))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        message: Option<&Bound<'py, PyAny>>,
        fields: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.encode_bytes(py, message, fields)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Validates `data` and returns a view that reads it in place. The limits default to
    /// the Rust decoder's (`ferry_wire::Limits::default()`).
    #[pyo3(signature = (data, *, max_message_len = None, max_depth = None, max_elements = None))]
    fn decode(
        &self,
        py: Python<'_>,
        data: Bound<'_, PyBytes>,
        max_message_len: Option<u64>,
        max_depth: Option<u32>,
        max_elements: Option<u64>,
    ) -> PyResult<View> {
        let d = Limits::default();
        let limits = Limits {
            max_message_len: max_message_len.unwrap_or(d.max_message_len),
            max_depth: max_depth.unwrap_or(d.max_depth),
            max_elements: max_elements.unwrap_or(d.max_elements),
        };
        View::decode(py, &self.schema, self.descriptor.full_name(), data, &limits)
    }

    /// Reads protobuf-JSON text (the proto3 mapping) into a view of its encoding.
    #[pyo3(name = "from_json")]
    fn read_json(&self, py: Python<'_>, text: &str) -> PyResult<View> {
        let bad = |e: json::JsonError| encode_error(py, &[], e);
        let doc = json::parse(text).map_err(bad)?;
        let m = json::from_json(&self.descriptor, self.desc(), &doc).map_err(bad)?;
        let bytes = m.to_vec().map_err(|e| encode_error(py, &[], e))?;
        self.decode_bytes(py, PyBytes::new(py, &bytes))
    }

    /// A view of this type as canonical protobuf-JSON, on one line.
    fn to_json(&self, py: Python<'_>, view: &View) -> PyResult<String> {
        if view.message_name() != self.descriptor.full_name() || !Arc::ptr_eq(view.schema(), &self.schema) {
            return Err(encode_error(
                py,
                &[],
                format!(
                    "expected a view of {} from this schema, found one of {}",
                    self.descriptor.full_name(),
                    view.message_name()
                ),
            ));
        }
        let m = view.dynamic(py)?;
        let mut text = String::new();
        json::to_json(&self.descriptor, &m, &mut text);
        Ok(text)
    }

    /// The message's full name.
    #[getter]
    fn name(&self) -> &str {
        self.descriptor.full_name()
    }

    /// The fields, in number order, as `Field` tuples.
    #[getter]
    fn fields(&self) -> Vec<Field> {
        self.desc().fields().iter().map(|f| self.field_info(f)).collect()
    }

    fn __repr__(&self) -> String {
        format!("<ferry.MessageType {}>", self.descriptor.full_name())
    }
}

/// `(name, number, kind, label, message, oneof)`: `kind` is the `.proto` type (`"int32"`,
/// `"string"`, `"enum"`, `"message"`, `"map"`...), `label` `"optional"`, `"required"` or
/// `"repeated"`, `message` the full name of a message or map entry type, `oneof` the name of
/// the oneof the field is a member of (proto3 `optional` fields are members of none).
type Field = (
    String,
    u32,
    &'static str,
    &'static str,
    Option<String>,
    Option<String>,
);

impl MessageType {
    fn field_info(&self, f: &ferry_wire::FieldDesc<'_>) -> Field {
        let (kind, message) = match f.kind {
            Kind::Message(d) if d.map_entry => ("map", Some(d.name.to_owned())),
            Kind::Message(d) => ("message", Some(d.name.to_owned())),
            k => (kind_name(k), None),
        };
        let label = match f.label {
            Label::Optional => "optional",
            Label::Required => "required",
            Label::Repeated => "repeated",
        };
        let oneof = self
            .descriptor
            .get_field(f.number)
            .and_then(|fd| fd.containing_oneof())
            .filter(|o| !o.is_synthetic())
            .map(|o| o.name().to_owned());
        (f.name.to_owned(), f.number, kind, label, message, oneof)
    }
}

fn kind_name(kind: Kind<'_>) -> &'static str {
    match kind {
        Kind::Double => "double",
        Kind::Float => "float",
        Kind::Int32 => "int32",
        Kind::Int64 => "int64",
        Kind::UInt32 => "uint32",
        Kind::UInt64 => "uint64",
        Kind::SInt32 => "sint32",
        Kind::SInt64 => "sint64",
        Kind::Fixed32 => "fixed32",
        Kind::Fixed64 => "fixed64",
        Kind::SFixed32 => "sfixed32",
        Kind::SFixed64 => "sfixed64",
        Kind::Bool => "bool",
        Kind::String => "string",
        Kind::Bytes => "bytes",
        Kind::Enum => "enum",
        Kind::Message(_) => "message",
    }
}
