//! Python values to a `DynamicMessage`, checked against the schema: a dict of field names
//! (nested dicts or views for messages, iterables for repeated fields, dicts for maps).
//! Every `bytes` and `string` value is copied, as `ferry encode` does.

use ferry_wire::{DynamicMessage, FieldDesc, HybridBytes, Kind, Label, List, MessageDesc, Value};
use prost_reflect::{FieldDescriptor, MessageDescriptor};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use ferry_reflect::values::{implicit_presence, is_default};

use crate::errors::encode_error;
use crate::view::View;

/// `obj` (a mapping of field names, or a view) as a message of type `md` / `desc`; `path` names
/// where it sits, for errors.
pub(crate) fn message<'d>(
    py: Python<'_>,
    md: &MessageDescriptor,
    desc: &'d MessageDesc<'d>,
    obj: &Bound<'_, PyAny>,
    path: &mut Vec<String>,
) -> PyResult<DynamicMessage<'d>> {
    let dict = match obj.cast::<View>() {
        Ok(view) => view.get().to_dict_bound(py)?,
        Err(_) => match obj.cast::<PyDict>() {
            Ok(d) => d.clone(),
            Err(_) => {
                return Err(encode_error(
                    py,
                    path,
                    format!(
                        "expected a dict for message `{}`, found {}",
                        md.full_name(),
                        type_name(obj)
                    ),
                ));
            }
        },
    };
    let mut m = DynamicMessage::new(desc);
    // The member set of each oneof so far (`DynamicMessage::set` would replace it).
    let mut oneofs: Vec<(u16, String)> = Vec::new();
    for (key, value) in dict.iter() {
        let name: String = key.extract().map_err(|_| {
            encode_error(
                py,
                path,
                format!("a field name must be a str, not {}", type_name(&key)),
            )
        })?;
        let (Some(f), Some(fd)) = (desc.field_by_name(&name), md.get_field_by_name(&name)) else {
            return Err(encode_error(
                py,
                path,
                format!("message `{}` has no field `{name}`", md.full_name()),
            ));
        };
        if value.is_none() {
            continue;
        }
        if let Some(o) = f.oneof {
            if let Some((_, other)) = oneofs.iter().find(|(i, _)| *i == o) {
                let what = format!("`{other}` and `{name}` are members of one oneof: set one");
                return Err(encode_error(py, path, what));
            }
            oneofs.push((o, name.clone()));
        }
        path.push(name);
        field(py, &mut m, f, &fd, &value, path)?;
        path.pop();
    }
    Ok(m)
}

fn field<'d>(
    py: Python<'_>,
    m: &mut DynamicMessage<'d>,
    f: &FieldDesc<'d>,
    fd: &FieldDescriptor,
    value: &Bound<'_, PyAny>,
    path: &mut Vec<String>,
) -> PyResult<()> {
    match (f.kind, f.label) {
        (Kind::Message(entry), Label::Repeated) if entry.map_entry => {
            let dict = value.cast::<PyDict>().map_err(|_| {
                encode_error(
                    py,
                    path,
                    format!("expected a dict for a map, found {}", type_name(value)),
                )
            })?;
            let (Some(kf), Some(vf)) = (entry.field(1), entry.field(2)) else {
                return Err(encode_error(py, path, "a map entry without key or value"));
            };
            let prost_reflect::Kind::Message(entry_md) = fd.kind() else {
                return Err(encode_error(py, path, "a map field that is not a message"));
            };
            let (Some(kfd), Some(vfd)) = (entry_md.get_field(1), entry_md.get_field(2)) else {
                return Err(encode_error(py, path, "a map entry without key or value"));
            };
            for (k, v) in dict.iter() {
                path.push(format!(
                    "[{}]",
                    k.repr().map(|r| r.to_string()).unwrap_or_default()
                ));
                let key = single(py, kf, &kfd, &k, path)?;
                let value = single(py, vf, &vfd, &v, path)?;
                path.pop();
                m.insert_map_entry(f.number, key, value)
                    .map_err(|e| encode_error(py, path, e))?;
            }
            Ok(())
        }
        (kind, Label::Repeated) => {
            if value.is_instance_of::<PyString>()
                || value.is_instance_of::<PyBytes>()
                || value.is_instance_of::<PyDict>()
            {
                return Err(encode_error(
                    py,
                    path,
                    format!("expected a list for a repeated field, found {}", type_name(value)),
                ));
            }
            let mut list = List::empty(kind);
            for (i, item) in value.try_iter()?.enumerate() {
                path.push(format!("[{i}]"));
                let v = single(py, f, fd, &item?, path)?;
                path.pop();
                // `single` made it for this field: of the list's kind.
                list.push(v);
            }
            m.set(f.number, Value::List(list))
                .map_err(|e| encode_error(py, path, e))
        }
        _ => {
            let v = single(py, f, fd, value, path)?;
            // As protobuf (and the JSON reader) do: a field without presence holding its
            // default is not written.
            if implicit_presence(fd) && is_default(&v) {
                return Ok(());
            }
            m.set(f.number, v).map_err(|e| encode_error(py, path, e))
        }
    }
}

/// One value of field `f` (an element, for a repeated field).
fn single<'d>(
    py: Python<'_>,
    f: &FieldDesc<'d>,
    fd: &FieldDescriptor,
    v: &Bound<'_, PyAny>,
    path: &mut Vec<String>,
) -> PyResult<Value<'d>> {
    let wrong = |path: &[String], expected: &str| {
        encode_error(py, path, format!("expected {expected}, found {}", type_name(v)))
    };
    let range = |path: &[String], what: &str| {
        let repr = v.repr().map(|r| r.to_string()).unwrap_or_default();
        encode_error(py, path, format!("{repr} is out of range for {what}"))
    };
    let int = |path: &[String], what: &str| -> PyResult<i128> {
        if v.is_instance_of::<pyo3::types::PyBool>() {
            return Err(wrong(path, what));
        }
        v.extract::<i128>().map_err(|_| wrong(path, what))
    };
    Ok(match f.kind {
        Kind::Bool => Value::Bool(v.extract::<bool>().map_err(|_| wrong(path, "a bool"))?),
        Kind::Int32 | Kind::SInt32 | Kind::SFixed32 => {
            Value::I32(i32::try_from(int(path, "an int")?).map_err(|_| range(path, "a 32-bit signed field"))?)
        }
        Kind::Enum => {
            if let Ok(name) = v.extract::<String>() {
                let e = match fd.kind() {
                    prost_reflect::Kind::Enum(e) => e,
                    _ => return Err(wrong(path, "an enum")),
                };
                match e.get_value_by_name(&name) {
                    Some(value) => Value::I32(value.number()),
                    None => {
                        return Err(encode_error(
                            py,
                            path,
                            format!("enum `{}` has no value `{name}`", e.full_name()),
                        ));
                    }
                }
            } else {
                Value::I32(
                    i32::try_from(int(path, "an int or an enum value's name")?)
                        .map_err(|_| range(path, "an enum"))?,
                )
            }
        }
        Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => {
            Value::I64(i64::try_from(int(path, "an int")?).map_err(|_| range(path, "a 64-bit signed field"))?)
        }
        Kind::UInt32 | Kind::Fixed32 => Value::U32(
            u32::try_from(int(path, "an int")?).map_err(|_| range(path, "a 32-bit unsigned field"))?,
        ),
        Kind::UInt64 | Kind::Fixed64 => Value::U64(
            u64::try_from(int(path, "an int")?).map_err(|_| range(path, "a 64-bit unsigned field"))?,
        ),
        Kind::Float => Value::F32(v.extract::<f64>().map_err(|_| wrong(path, "a float"))? as f32),
        Kind::Double => Value::F64(v.extract::<f64>().map_err(|_| wrong(path, "a float"))?),
        Kind::String => {
            let s = v.cast::<PyString>().map_err(|_| wrong(path, "a str"))?;
            Value::Bytes(HybridBytes::from_vec(s.to_cow()?.as_bytes().to_vec()))
        }
        Kind::Bytes => {
            if v.is_instance_of::<PyString>() {
                return Err(wrong(path, "bytes"));
            }
            // bytes, bytearray, memoryview...: copied (through `bytes(v)` for the others).
            let bytes = match v.cast::<PyBytes>() {
                Ok(b) => b.as_bytes().to_vec(),
                Err(_) => {
                    let b = py
                        .get_type::<PyBytes>()
                        .call1((v,))
                        .map_err(|_| wrong(path, "bytes"))?;
                    b.cast::<PyBytes>()
                        .map_err(|_| wrong(path, "bytes"))?
                        .as_bytes()
                        .to_vec()
                }
            };
            Value::Bytes(HybridBytes::from_vec(bytes))
        }
        Kind::Message(d) => {
            let md = match fd.kind() {
                prost_reflect::Kind::Message(md) => md,
                _ => return Err(wrong(path, "a message")),
            };
            Value::Message(message(py, &md, d, v, path)?)
        }
    })
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}
