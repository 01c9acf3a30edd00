//! `ferry inspect`: the header layout of a message read from standard input.
//!
//! The message is validated first (invalid bytes exit 2, as for `decode`). Then, in the
//! encoder's walk order (depth first, ascending field numbers), one line per item, each starting
//! with its offset (hexadecimal, from the start of the message):
//!
//! ```text
//! ferry.test.Outer: 128 bytes
//! 0x0000 header ferry.test.Outer: 2 chunks, 3 entries, 64 bytes
//!   0x0008 chunk 0: group 0, rank base 0, bits 0x0000000000000006 (fields 1, 2)
//!   0x0018 chunk 1: group 1, rank base 2, bits 0x0000000000000040 (fields 70)
//!   0x0028 field 1 inner: ferry.test.Inner = header (offset 0x0040, length 40)
//!     0x0040 header ferry.test.Inner: 1 chunks, 2 entries, 40 bytes
//!       ...
//!       0x0060 field 2 tag: string = (offset 0x0068, length 2) copied "hi"
//!   0x0030 field 2 nums: repeated int32 = packed (offset 0x0070, length 12) copied, 3 elements [1, -1, 3]
//!   0x0038 field 70 far: fixed64 = 72623859790382856
//! regions:
//!   header segment (root header and copied region): 0x0000..0x0080, 128 bytes
//!   zero-copy region: none
//! ```
//!
//! Chunks list the fields they mark present; entries show a scalar's value, or the (offset,
//! length) of a value, a nested header (printed below it, indented), a packed array or a pointer
//! array (each pointer on its own line). Fields not in the schema show their raw entry.
//!
//! Copied or zero-copy is not on the wire, so it is inferred from the placement rules of the
//! reference encoder (`docs/wire-format.md`, section 7): walking in its order, a `bytes`/`string`
//! value that starts where the next copied item would go is "copied", any other is "zero-copy";
//! the header segment ends where the last copied item ends. A referenced value that happens to
//! sit exactly there (nothing was copied after it) reads as copied: the bytes are the same
//! either way. A message laid out otherwise gets a note saying where it departs from the rules.

use std::fmt::Write as _;
use std::io::Write as _;

use ferry::Context;
use ferry::wire::layout::{self, CHUNK_LEN, ENTRY_LEN, PREAMBLE_LEN, read_u16, read_u32, read_u64};
use ferry::wire::{DynamicMessage, Kind, Label, MessageDesc, View};
use prost_reflect::{FieldDescriptor, Kind as PKind, MessageDescriptor};

use crate::decode::{LimitArgs, invalid, read_stdin};
use crate::schema::{CliError, SchemaArgs};

/// Options of `ferry inspect`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    schema: SchemaArgs,
    #[command(flatten)]
    limits: LimitArgs,
}

/// Validates the message (within the limits of the options), then prints its layout.
pub fn run(args: &Args) -> Result<(), CliError> {
    let schema = args.schema.load()?;
    let loaded = args.schema.find(&schema)?;
    let limits = args.limits.limits();
    let bytes = read_stdin(&limits)?;
    // Exactly what `ferry decode` accepts with the same limits: validation, then every string
    // read as text.
    let view = View::decode(&bytes, loaded.desc, &limits).map_err(invalid)?;
    DynamicMessage::from_view(&view, Context::copy_only()).map_err(invalid)?;
    let text = render(&bytes, &loaded.descriptor, loaded.desc);
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| CliError::Usage(format!("writing standard output: {e}")))
}

/// The layout of `buf`, a message of type `md`/`desc` that has passed validation.
pub fn render(buf: &[u8], md: &MessageDescriptor, desc: &MessageDesc<'_>) -> String {
    let mut ins = Inspector {
        buf,
        out: String::new(),
        copy: 0,
        departs: None,
        zero_copy: Vec::new(),
    };
    let _ = writeln!(ins.out, "{}: {} bytes", desc.name, buf.len());
    let root_len = ins.header_len(0);
    ins.copy = root_len;
    ins.header(0, Some(md), desc, 0);
    ins.regions();
    ins.out
}

struct Inspector<'b> {
    buf: &'b [u8],
    out: String,
    /// Where the reference encoder would put the next copied item.
    copy: usize,
    /// The first item that is not where the reference encoder would put it.
    departs: Option<usize>,
    /// (offset, length) of the values inferred to be zero-copy, in walk order.
    zero_copy: Vec<(usize, usize)>,
}

fn pad(n: usize) -> String {
    "  ".repeat(n)
}

impl Inspector<'_> {
    fn header_len(&self, at: usize) -> usize {
        let chunks = read_u16(self.buf, at).unwrap_or(0) as usize;
        let entries = read_u32(self.buf, at + 4).unwrap_or(0) as usize;
        layout::header_len(chunks, entries)
    }

    /// A header, array or packed list at `off`: claims it as the next structure.
    fn structure(&mut self, off: usize, len: usize) {
        if len == 0 {
            return;
        }
        if off == self.copy {
            self.copy += layout::align(len);
        } else if self.departs.is_none() {
            self.departs = Some(off);
        }
    }

    /// A `bytes`/`string` value: "copied", "zero-copy" or "empty".
    fn value(&mut self, off: usize, len: usize) -> &'static str {
        if len == 0 {
            "empty"
        } else if off == self.copy {
            self.copy += layout::align(len);
            "copied"
        } else {
            self.zero_copy.push((off, len));
            "zero-copy"
        }
    }

    fn header(&mut self, at: usize, md: Option<&MessageDescriptor>, desc: &MessageDesc<'_>, depth: usize) {
        let chunks = read_u16(self.buf, at).unwrap_or(0) as usize;
        let entries = read_u32(self.buf, at + 4).unwrap_or(0);
        let len = layout::header_len(chunks, entries as usize);
        let _ = writeln!(
            self.out,
            "{}0x{at:04x} header {}: {chunks} chunks, {entries} entries, {len} bytes",
            pad(depth),
            desc.name
        );
        let mut present = Vec::new();
        for i in 0..chunks {
            let c = at + PREAMBLE_LEN + CHUNK_LEN * i;
            let group = read_u32(self.buf, c).unwrap_or(0);
            let base = read_u32(self.buf, c + 4).unwrap_or(0);
            let bits = read_u64(self.buf, c + 8).unwrap_or(0);
            let fields: Vec<u32> = (0..64u32)
                .filter(|b| bits & (1 << b) != 0)
                .map(|b| group.saturating_mul(64).saturating_add(b))
                .collect();
            let list: Vec<String> = fields.iter().map(u32::to_string).collect();
            let _ = writeln!(
                self.out,
                "{}0x{c:04x} chunk {i}: group {group}, rank base {base}, bits 0x{bits:016x} (fields {})",
                pad(depth + 1),
                list.join(", ")
            );
            present.extend(fields);
        }
        let entries_at = at + PREAMBLE_LEN + CHUNK_LEN * chunks;
        for (k, n) in present.into_iter().enumerate() {
            let e_at = entries_at + ENTRY_LEN * k;
            let raw = read_u64(self.buf, e_at).unwrap_or(0);
            self.field(e_at, raw, n, md, desc, depth + 1);
        }
    }

    fn field(
        &mut self,
        e_at: usize,
        raw: u64,
        n: u32,
        md: Option<&MessageDescriptor>,
        desc: &MessageDesc<'_>,
        depth: usize,
    ) {
        let ind = pad(depth);
        let Some(f) = desc.field(n) else {
            let _ = writeln!(
                self.out,
                "{ind}0x{e_at:04x} field {n} (not in the schema): raw 0x{raw:016x}"
            );
            return;
        };
        let pf = md.and_then(|m| m.get_field(n));
        let type_name = pf.as_ref().map_or_else(|| format!("{:?}", f.kind), type_name);
        let head = format!("{ind}0x{e_at:04x} field {n} {}: {type_name} =", f.name);
        let (off, len) = layout::split_range(raw);
        let (off, len) = (off as usize, len as usize);
        let child_md = match pf.as_ref().map(FieldDescriptor::kind) {
            Some(PKind::Message(m)) => Some(m),
            _ => None,
        };
        if f.label == Label::Repeated {
            if let Some(w) = f.kind.packed_width() {
                self.structure(off, len);
                let elems = packed(
                    self.buf.get(off..off + len).unwrap_or_default(),
                    w,
                    f.kind,
                    pf.as_ref(),
                );
                let _ = writeln!(
                    self.out,
                    "{head} packed (offset 0x{off:04x}, length {len}), {} elements [{elems}]",
                    len / w
                );
                return;
            }
            self.structure(off, len);
            let count = len / ENTRY_LEN;
            let _ = writeln!(
                self.out,
                "{head} pointers (offset 0x{off:04x}, length {len}), {count} elements"
            );
            for i in 0..count {
                let p = off + ENTRY_LEN * i;
                let (o, l) = layout::split_range(read_u64(self.buf, p).unwrap_or(0));
                let (o, l) = (o as usize, l as usize);
                let ind = pad(depth + 1);
                match f.kind {
                    Kind::Message(d) => {
                        let _ = writeln!(
                            self.out,
                            "{ind}0x{p:04x} [{i}] = header (offset 0x{o:04x}, length {l})"
                        );
                        self.structure(o, l);
                        self.header(o, child_md.as_ref(), d, depth + 2);
                    }
                    kind => {
                        let tag = self.value(o, l);
                        let preview = preview(kind, self.buf.get(o..o + l).unwrap_or_default());
                        let _ = writeln!(
                            self.out,
                            "{ind}0x{p:04x} [{i}] = (offset 0x{o:04x}, length {l}) {tag}{preview}"
                        );
                    }
                }
            }
            return;
        }
        match f.kind {
            Kind::Message(d) => {
                let _ = writeln!(self.out, "{head} header (offset 0x{off:04x}, length {len})");
                self.structure(off, len);
                self.header(off, child_md.as_ref(), d, depth + 1);
            }
            Kind::String | Kind::Bytes => {
                let tag = self.value(off, len);
                let preview = preview(f.kind, self.buf.get(off..off + len).unwrap_or_default());
                let _ = writeln!(
                    self.out,
                    "{head} (offset 0x{off:04x}, length {len}) {tag}{preview}"
                );
            }
            kind => {
                let _ = writeln!(self.out, "{head} {}", scalar(kind, raw, pf.as_ref()));
            }
        }
    }

    fn regions(&mut self) {
        let head = self.copy;
        let _ = writeln!(self.out, "regions:");
        let _ = writeln!(
            self.out,
            "  header segment (root header and copied region): 0x0000..0x{head:04x}, {head} bytes"
        );
        let mut end = head;
        if self.zero_copy.is_empty() {
            let _ = writeln!(self.out, "  zero-copy region: none");
        } else {
            let start = self.zero_copy.iter().map(|z| z.0).min().unwrap_or(head);
            end = self
                .zero_copy
                .iter()
                .map(|z| z.0 + z.1)
                .max()
                .unwrap_or(head)
                .max(head);
            let total: usize = self.zero_copy.iter().map(|z| z.1).sum();
            let _ = writeln!(
                self.out,
                "  zero-copy region: 0x{start:04x}..0x{end:04x}, {total} bytes in {} values",
                self.zero_copy.len()
            );
            let mut expect = head;
            for &(o, l) in &self.zero_copy {
                if o != expect && self.departs.is_none() {
                    self.departs = Some(o);
                }
                expect = o + l;
            }
        }
        if self.buf.len() > end {
            let _ = writeln!(
                self.out,
                "  trailing bytes: 0x{end:04x}..0x{:04x}, {} bytes (ignored)",
                self.buf.len(),
                self.buf.len() - end
            );
        }
        if let Some(at) = self.departs {
            let _ = writeln!(
                self.out,
                "note: from 0x{at:04x} the layout is not the reference encoder's; the regions above are a guess"
            );
        }
    }
}

fn kind_name(k: &PKind) -> String {
    match k {
        PKind::Double => "double".into(),
        PKind::Float => "float".into(),
        PKind::Int32 => "int32".into(),
        PKind::Int64 => "int64".into(),
        PKind::Uint32 => "uint32".into(),
        PKind::Uint64 => "uint64".into(),
        PKind::Sint32 => "sint32".into(),
        PKind::Sint64 => "sint64".into(),
        PKind::Fixed32 => "fixed32".into(),
        PKind::Fixed64 => "fixed64".into(),
        PKind::Sfixed32 => "sfixed32".into(),
        PKind::Sfixed64 => "sfixed64".into(),
        PKind::Bool => "bool".into(),
        PKind::String => "string".into(),
        PKind::Bytes => "bytes".into(),
        PKind::Message(m) => m.full_name().into(),
        PKind::Enum(e) => e.full_name().into(),
    }
}

fn type_name(f: &FieldDescriptor) -> String {
    match f.kind() {
        PKind::Message(entry) if f.is_map() => format!(
            "map<{}, {}>",
            kind_name(&entry.map_entry_key_field().kind()),
            kind_name(&entry.map_entry_value_field().kind())
        ),
        k if f.is_list() => format!("repeated {}", kind_name(&k)),
        k => kind_name(&k),
    }
}

/// A scalar entry (or packed element, zero-extended) as text.
fn scalar(kind: Kind, raw: u64, f: Option<&FieldDescriptor>) -> String {
    match kind {
        Kind::Int32 | Kind::SInt32 | Kind::SFixed32 => (raw as u32 as i32).to_string(),
        Kind::UInt32 | Kind::Fixed32 => (raw as u32).to_string(),
        Kind::Int64 | Kind::SInt64 | Kind::SFixed64 => (raw as i64).to_string(),
        Kind::UInt64 | Kind::Fixed64 => raw.to_string(),
        Kind::Float => format!("{:?}", f32::from_bits(raw as u32)),
        Kind::Double => format!("{:?}", f64::from_bits(raw)),
        Kind::Bool => (raw != 0).to_string(),
        Kind::Enum => {
            let n = raw as u32 as i32;
            let name = match f.map(FieldDescriptor::kind) {
                Some(PKind::Enum(e)) => e.get_value(n).map(|v| v.name().to_owned()),
                _ => None,
            };
            match name {
                Some(name) => format!("{name} ({n})"),
                None => n.to_string(),
            }
        }
        Kind::String | Kind::Bytes | Kind::Message(_) => format!("0x{raw:016x}"),
    }
}

/// Up to 8 elements of a packed list.
fn packed(data: &[u8], width: usize, kind: Kind, f: Option<&FieldDescriptor>) -> String {
    const SHOWN: usize = 8;
    let mut items: Vec<String> = data
        .chunks_exact(width)
        .take(SHOWN)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            scalar(kind, u64::from_le_bytes(b), f)
        })
        .collect();
    if data.len() / width > SHOWN {
        items.push("...".into());
    }
    items.join(", ")
}

/// A short look at a value: the text of a string, the first bytes of a `bytes`.
fn preview(kind: Kind, data: &[u8]) -> String {
    const SHOWN: usize = 24;
    if data.is_empty() {
        return String::new();
    }
    match kind {
        Kind::String => {
            let text = String::from_utf8_lossy(data);
            let short: String = text.chars().take(SHOWN).collect();
            let more = if text.chars().count() > SHOWN { "..." } else { "" };
            format!(" {short:?}{more}")
        }
        _ => {
            let hex: Vec<String> = data.iter().take(SHOWN / 2).map(|b| format!("{b:02x}")).collect();
            let more = if data.len() > SHOWN / 2 { " ..." } else { "" };
            format!(" [{}{more}]", hex.join(" "))
        }
    }
}
