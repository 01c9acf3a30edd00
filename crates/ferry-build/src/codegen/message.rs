//! Messages: the descriptor static, the struct with its setters and getters, `Encode`, the
//! zero-copy view, and a nested module for nested types, map entries and oneof enums.

use proc_macro2::{Literal, TokenStream};
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor, OneofDescriptor, Value};
use quote::{format_ident, quote};

use super::docs::{SourceInfo, doc};
use super::names::{Scope, ident, snake};
use super::{Context, enums, oneof_index};
use crate::BuildError;

/// Methods every message or view has (or inherits from a trait), which field accessors must
/// not shadow; and names clippy expects to implement a standard trait.
const RESERVED_METHODS: &[&str] = &[
    "new",
    "decode",
    "decode_with",
    "decode_shared",
    "ctx",
    "view",
    "to_message",
    "visit",
    "visit_as",
    "layout",
    "write_head",
    "for_each_zero_copy",
    "to_vec",
    "zero_copy_bufs",
    "clone",
    "fmt",
    "as_ref",
    "borrow",
    "deref",
    "as_mut",
    "borrow_mut",
    "deref_mut",
];

/// The accessor names of a field with base name `b` (all claimed, whichever are generated, so
/// that names do not depend on the field's kind).
fn field_methods(b: &str) -> Vec<String> {
    vec![
        b.to_string(),
        format!("set_{b}"),
        format!("clear_{b}"),
        format!("has_{b}"),
        sfx(b, "mut"),
        format!("init_{b}"),
        format!("append_{b}"),
        format!("insert_{b}"),
        sfx(b, "get"),
        sfx(b, "hybrid"),
    ]
}

/// `b` + `_` + `suffix`, without a double underscore after names like `self_`.
fn sfx(b: &str, suffix: &str) -> String {
    format!("{}_{suffix}", b.trim_end_matches('_'))
}

/// A scalar kind: its Rust type and its wire kind.
#[derive(Clone)]
struct Scalar {
    rust: TokenStream,
    kind: TokenStream,
    float: bool,
    boolean: bool,
    enumeration: bool,
}

#[derive(Clone)]
enum Ty {
    Scalar(Scalar),
    Bytes,
    Str,
    Msg(MessageDescriptor),
}

enum Shape {
    /// proto3 singular without `optional`: absent means default; defaults are not sent.
    Implicit,
    /// Explicit presence: `Option<T>`.
    Explicit,
    Repeated,
    Map(Ty, Ty),
    /// Member of a (non-synthetic) oneof, by oneof index.
    Oneof(usize),
}

struct Field {
    desc: FieldDescriptor,
    number: u32,
    base: String,
    ty: Ty,
    shape: Shape,
    boxed: bool,
    /// Non-zero default (proto2 `[default = ...]`, or a proto2 enum whose first value is not 0).
    default: Option<TokenStream>,
    variant: String,
}

struct Gen<'c, 'p> {
    ctx: &'c Context<'p>,
    msg: MessageDescriptor,
    /// Module that holds the message.
    cur: Vec<String>,
    /// Module of the message's nested items.
    inner: Vec<String>,
    w: TokenStream,
    rt: TokenStream,
}

fn scalar(kind: &Kind) -> Option<Scalar> {
    let (rust, k) = match kind {
        Kind::Double => (quote!(f64), quote!(Double)),
        Kind::Float => (quote!(f32), quote!(Float)),
        Kind::Int32 => (quote!(i32), quote!(Int32)),
        Kind::Int64 => (quote!(i64), quote!(Int64)),
        Kind::Uint32 => (quote!(u32), quote!(UInt32)),
        Kind::Uint64 => (quote!(u64), quote!(UInt64)),
        Kind::Sint32 => (quote!(i32), quote!(SInt32)),
        Kind::Sint64 => (quote!(i64), quote!(SInt64)),
        Kind::Fixed32 => (quote!(u32), quote!(Fixed32)),
        Kind::Fixed64 => (quote!(u64), quote!(Fixed64)),
        Kind::Sfixed32 => (quote!(i32), quote!(SFixed32)),
        Kind::Sfixed64 => (quote!(i64), quote!(SFixed64)),
        Kind::Bool => (quote!(bool), quote!(Bool)),
        Kind::Enum(_) => (quote!(i32), quote!(Enum)),
        Kind::String | Kind::Bytes | Kind::Message(_) => return None,
    };
    Some(Scalar {
        rust,
        kind: k,
        float: matches!(kind, Kind::Double | Kind::Float),
        boolean: matches!(kind, Kind::Bool),
        enumeration: matches!(kind, Kind::Enum(_)),
    })
}

fn ty_of(kind: &Kind) -> Ty {
    match kind {
        Kind::String => Ty::Str,
        Kind::Bytes => Ty::Bytes,
        Kind::Message(m) => Ty::Msg(m.clone()),
        k => Ty::Scalar(scalar(k).unwrap_or_else(|| unreachable!("all other kinds are scalars"))),
    }
}

fn float_lit(v: f64, ty: &str) -> TokenStream {
    let t = format_ident!("{}", ty);
    if v.is_nan() {
        quote!(#t::NAN)
    } else if v == f64::INFINITY {
        quote!(#t::INFINITY)
    } else if v == f64::NEG_INFINITY {
        quote!(#t::NEG_INFINITY)
    } else {
        let s = if ty == "f32" {
            format!("{:?}", v as f32)
        } else {
            format!("{v:?}")
        };
        let lit: TokenStream = format!("{s}{ty}").parse().unwrap_or_default();
        lit
    }
}

/// The non-zero default of a singular field, as a literal.
fn default_of(f: &FieldDescriptor) -> Option<TokenStream> {
    if f.is_list() || f.is_map() {
        return None;
    }
    Some(match f.default_value() {
        Value::Bool(true) => quote!(true),
        Value::I32(v) if v != 0 => int_lit(v as i64, "i32"),
        Value::EnumNumber(v) if v != 0 => int_lit(v as i64, "i32"),
        Value::I64(v) if v != 0 => int_lit(v, "i64"),
        Value::U32(v) if v != 0 => {
            let l = Literal::u32_suffixed(v);
            quote!(#l)
        }
        Value::U64(v) if v != 0 => {
            let l = Literal::u64_suffixed(v);
            quote!(#l)
        }
        Value::F32(v) if v.to_bits() != 0 => float_lit(v as f64, "f32"),
        Value::F64(v) if v.to_bits() != 0 => float_lit(v, "f64"),
        Value::String(s) if !s.is_empty() => {
            let l = Literal::string(&s);
            quote!(#l)
        }
        Value::Bytes(b) if !b.is_empty() => {
            let l = Literal::byte_string(&b);
            quote!(#l)
        }
        _ => return None,
    })
}

fn int_lit(v: i64, ty: &str) -> TokenStream {
    let t = format_ident!("{}", ty);
    if ty == "i32" && v == i32::MIN as i64 {
        return quote!(#t::MIN);
    }
    if v == i64::MIN {
        return quote!(#t::MIN);
    }
    let l = if ty == "i32" {
        Literal::i32_suffixed(v.unsigned_abs() as i32)
    } else {
        Literal::i64_suffixed(v.unsigned_abs() as i64)
    };
    if v < 0 { quote!(-#l) } else { quote!(#l) }
}

impl Gen<'_, '_> {
    fn msg_path(&self, m: &MessageDescriptor) -> TokenStream {
        let n = self.ctx.message(m);
        self.ctx.path(&self.cur, &n.module, &n.name)
    }
    fn view_path(&self, m: &MessageDescriptor) -> TokenStream {
        let n = self.ctx.message(m);
        self.ctx.path(&self.cur, &n.module, &n.view)
    }
    fn oneof_path(&self, o: usize) -> TokenStream {
        let n = self.ctx.message(&self.msg);
        self.ctx.path(&self.cur, &self.inner, &n.oneofs[&o])
    }
    /// Whether the oneof's enum needs a lifetime (it holds bytes, strings or messages).
    fn oneof_has_lifetime(o: &OneofDescriptor) -> bool {
        o.fields().any(|f| !matches!(ty_of(&f.kind()), Ty::Scalar(_)))
    }

    fn value_ty(&self, ty: &Ty, lt: &TokenStream) -> TokenStream {
        let w = &self.w;
        match ty {
            Ty::Scalar(s) => s.rust.clone(),
            Ty::Bytes => quote!(#w::HybridBytes<#lt>),
            Ty::Str => quote!(#w::HybridStr<#lt>),
            Ty::Msg(m) => {
                let p = self.msg_path(m);
                quote!(#p<#lt>)
            }
        }
    }

    fn storage_ty(&self, f: &Field) -> TokenStream {
        let lt = quote!('a);
        if let Shape::Map(k, val) = &f.shape {
            let k = self.value_ty(k, &lt);
            let val = self.value_ty(val, &lt);
            return quote!(::std::collections::BTreeMap<#k, #val>);
        }
        let v = self.value_ty(&f.ty, &lt);
        let v = if f.boxed { quote!(::std::boxed::Box<#v>) } else { v };
        match &f.shape {
            Shape::Implicit => v,
            Shape::Explicit => quote!(::core::option::Option<#v>),
            Shape::Repeated => quote!(::std::vec::Vec<#v>),
            Shape::Map(..) | Shape::Oneof(_) => {
                unreachable!("maps are handled above; oneof members live in their oneof")
            }
        }
    }

    /// How a setter takes a value of `ty`, and how it is turned into the stored value.
    fn param(&self, ty: &Ty, x: &TokenStream) -> (TokenStream, TokenStream) {
        let w = &self.w;
        match ty {
            Ty::Scalar(s) if s.enumeration => (quote!(impl ::core::convert::Into<i32>), quote!(#x.into())),
            Ty::Scalar(s) => (s.rust.clone(), quote!(#x)),
            Ty::Bytes => (quote!(impl #w::IntoHybrid<'a>), quote!(#x.into_hybrid(self.ctx))),
            Ty::Str => (
                quote!(impl #w::IntoHybridStr<'a>),
                quote!(#x.into_hybrid_str(self.ctx)),
            ),
            Ty::Msg(m) => {
                let p = self.msg_path(m);
                (quote!(#p<'a>), quote!(#x))
            }
        }
    }

    fn fields(&self) -> Vec<Field> {
        let mut scope = Scope::with(RESERVED_METHODS);
        let mut oneof_bases = std::collections::HashMap::new();
        let mut out = Vec::new();
        for desc in self.msg.fields() {
            // Oneof accessors claim their names where the first member appears.
            if let Some(o) = desc.containing_oneof().filter(|o| !o.is_synthetic()) {
                oneof_bases
                    .entry(oneof_index(&o))
                    .or_insert_with(|| scope.claim_set(&snake(o.name()), "_", field_methods));
            }
            let base = scope.claim_set(&snake(desc.name()), "_", field_methods);
            let shape = if desc.is_map() {
                let entry = desc.kind();
                let entry = entry
                    .as_message()
                    .unwrap_or_else(|| unreachable!("maps have entry messages"));
                Shape::Map(
                    ty_of(&entry.map_entry_key_field().kind()),
                    ty_of(&entry.map_entry_value_field().kind()),
                )
            } else if desc.is_list() {
                Shape::Repeated
            } else if let Some(o) = desc.containing_oneof().filter(|o| !o.is_synthetic()) {
                Shape::Oneof(oneof_index(&o))
            } else if desc.supports_presence() {
                Shape::Explicit
            } else {
                Shape::Implicit
            };
            let ty = ty_of(&desc.kind());
            let boxed = match (&ty, &shape) {
                (Ty::Msg(_), Shape::Oneof(_)) => true,
                (Ty::Msg(m), Shape::Explicit) => self.ctx.boxed(&self.msg, m),
                _ => false,
            };
            out.push(Field {
                number: desc.number(),
                default: default_of(&desc),
                variant: super::names::camel(desc.name()),
                desc,
                base,
                ty,
                shape,
                boxed,
            });
        }
        // Oneof variant names must be unique within their enum.
        let mut by_oneof: std::collections::HashMap<usize, Scope> = std::collections::HashMap::new();
        for f in &mut out {
            if let Shape::Oneof(o) = f.shape {
                f.variant = by_oneof.entry(o).or_default().claim(&f.variant, "");
            }
        }
        // The oneof names themselves are recomputed in the same order by `oneof_base`.
        drop(oneof_bases);
        out
    }

    fn oneof_base(&self, fields: &[Field], o: usize) -> String {
        // Recomputed the same way as in `fields`: the claim order is deterministic.
        let mut scope = Scope::with(RESERVED_METHODS);
        let mut bases = std::collections::HashMap::new();
        for f in fields {
            if let Some(oo) = f.desc.containing_oneof().filter(|x| !x.is_synthetic()) {
                bases
                    .entry(oneof_index(&oo))
                    .or_insert_with(|| scope.claim_set(&snake(oo.name()), "_", field_methods));
            }
            scope.claim_set(&snake(f.desc.name()), "_", field_methods);
        }
        bases.remove(&o).unwrap_or_default()
    }
}

pub(crate) fn generate(
    ctx: &Context<'_>,
    msg: &MessageDescriptor,
    _package: &[String],
) -> Result<TokenStream, BuildError> {
    let names = ctx.message(msg).clone();
    let mut inner = names.module.clone();
    inner.push(names.nested.clone().unwrap_or_default());
    let rt = ctx.runtime.clone();
    let g = Gen {
        ctx,
        msg: msg.clone(),
        cur: names.module.clone(),
        inner,
        w: quote!(#rt::wire),
        rt,
    };
    g.message(&names)
}

impl Gen<'_, '_> {
    fn desc_static(&self, m: &MessageDescriptor, cur: &[String]) -> TokenStream {
        let w = &self.w;
        let n = self.ctx.message(m);
        let name = ident(&n.desc);
        let full = m.full_name();
        let map_entry = m.is_map_entry();
        let mut fields: Vec<FieldDescriptor> = m.fields().collect();
        fields.sort_by_key(|f| f.number());
        let real_oneofs: Vec<usize> = m
            .oneofs()
            .filter(|o| !o.is_synthetic())
            .map(|o| oneof_index(&o))
            .collect();
        let fds = fields.iter().map(|f| {
            let fname = f.name();
            let number = Literal::u32_unsuffixed(f.number());
            let kind = match f.kind() {
                Kind::String => quote!(String),
                Kind::Bytes => quote!(Bytes),
                Kind::Message(c) => {
                    let cn = self.ctx.message(&c);
                    let p = self.ctx.path(cur, &cn.module, &cn.desc);
                    quote!(Message(&#p))
                }
                k => scalar(&k).map(|s| s.kind).unwrap_or_default(),
            };
            let label = if f.is_list() || f.is_map() {
                quote!(Repeated)
            } else if f.is_required() {
                quote!(Required)
            } else {
                quote!(Optional)
            };
            let oneof = match f.containing_oneof().and_then(|o| real_oneofs.iter().position(|i| *i == oneof_index(&o))) {
                Some(i) => {
                    let i = i as u16;
                    quote!(::core::option::Option::Some(#i))
                }
                None => quote!(::core::option::Option::None),
            };
            quote! {
                #w::FieldDesc { name: #fname, number: #number, kind: #w::Kind::#kind, label: #w::Label::#label, oneof: #oneof },
            }
        });
        let d = format!(" Descriptor of `{full}`.");
        quote! {
            #[doc = #d]
            pub static #name: #w::MessageDesc = #w::MessageDesc::new(#full, &[#(#fds)*], #map_entry);
        }
    }

    /// A singular scalar or enum field.
    fn emit_singular_scalar(&self, f: &Field, s: &Scalar, ids: &FieldNames, out: &mut Emitted) {
        let num = ids.num;
        let FieldNames {
            n,
            fid,
            set,
            clear,
            has,
            fdoc,
            selfconv,
            dset,
            dclear,
            dhas,
            ..
        } = ids;
        let Emitted {
            methods,
            view_methods,
            to_msg,
            visits,
            encodes,
            ..
        } = out;
        let t = &s.rust;
        let explicit = matches!(f.shape, Shape::Explicit);
        let (pty, conv) = self.param(&f.ty, &quote!(value));
        let get = match (&f.default, explicit) {
            (_, false) => quote!(self.#fid),
            (Some(d), true) => quote!(self.#fid.unwrap_or(#d)),
            (None, true) => quote!(self.#fid.unwrap_or_default()),
        };
        let store = if explicit {
            quote!(::core::option::Option::Some(#conv))
        } else {
            conv
        };
        let presence = if explicit {
            quote! {
                #[doc = #dhas] #selfconv
                pub fn #has(&self) -> bool { self.#fid.is_some() }
                #[doc = #dclear] #selfconv
                pub fn #clear(&mut self) { self.#fid = ::core::option::Option::None; }
            }
        } else {
            quote! {
                #[doc = #dclear] #selfconv
                pub fn #clear(&mut self) { self.#fid = ::core::default::Default::default(); }
            }
        };
        methods.push(quote! {
            #fdoc #selfconv
            pub fn #fid(&self) -> #t { #get }
            #[doc = #dset] #selfconv
            pub fn #set(&mut self, value: #pty) { self.#fid = #store; }
            #presence
        });
        visits.push((
            num,
            if explicit {
                quote!(if let ::core::option::Option::Some(x) = self.#fid { v.scalar(#n, x); })
            } else if s.boolean {
                quote!(if self.#fid { v.scalar(#n, true); })
            } else if s.float {
                quote!(if self.#fid.to_bits() != 0 { v.scalar(#n, self.#fid); })
            } else {
                quote!(if self.#fid != 0 { v.scalar(#n, self.#fid); })
            },
        ));
        let (present, guard, write) = if explicit {
            (
                quote!(self.#fid.is_some()),
                quote!(if let ::core::option::Option::Some(x) = self.#fid),
                quote!(w.scalar(x)),
            )
        } else if s.boolean {
            (quote!(self.#fid), quote!(if self.#fid), quote!(w.scalar(true)))
        } else if s.float {
            let p = quote!(self.#fid.to_bits() != 0);
            (p.clone(), quote!(if #p), quote!(w.scalar(self.#fid)))
        } else {
            let p = quote!(self.#fid != 0);
            (p.clone(), quote!(if #p), quote!(w.scalar(self.#fid)))
        };
        encodes.push(EncodeOp {
            num,
            present,
            guard,
            size: quote!(),
            write,
        });
        let vget = match &f.default {
            Some(d) => quote!(self.0.scalar(#n).unwrap_or(#d)),
            None => quote!(self.0.scalar(#n).unwrap_or_default()),
        };
        view_methods.push(quote! {
            #fdoc #selfconv
            pub fn #fid(&self) -> #t { #vget }
        });
        if explicit {
            view_methods.push(quote! {
                #[doc = #dhas] #selfconv
                pub fn #has(&self) -> bool { self.0.has(#n) }
            });
            to_msg.push(quote!(m.#fid = self.0.scalar(#n);));
        } else {
            to_msg.push(quote!(m.#fid = self.0.scalar(#n).unwrap_or_default();));
        }
    }

    /// A singular `bytes` or `string` field.
    fn emit_singular_bytes(&self, f: &Field, ids: &FieldNames, out: &mut Emitted) {
        let num = ids.num;
        let FieldNames {
            n,
            fid,
            set,
            clear,
            has,
            hybrid,
            pname,
            fdoc,
            selfconv,
            dset,
            dclear,
            dhas,
            ..
        } = ids;
        let Emitted {
            methods,
            view_methods,
            to_msg,
            visits,
            encodes,
            ..
        } = out;
        let w = &self.w;
        let is_str = matches!(f.ty, Ty::Str);
        let explicit = matches!(f.shape, Shape::Explicit);
        let (pty, conv) = self.param(&f.ty, &quote!(value));
        let (out, hty, as_val, empty) = if is_str {
            (
                quote!(&str),
                quote!(#w::HybridStr<'a>),
                quote!(as_str()),
                quote!(""),
            )
        } else {
            (
                quote!(&[u8]),
                quote!(#w::HybridBytes<'a>),
                quote!(as_slice()),
                quote!(&[]),
            )
        };
        let dflt = f.default.clone().unwrap_or(empty);
        let dh = format!(" `{pname}` as stored: copied or zero-copy.");
        if explicit {
            methods.push(quote! {
                #fdoc #selfconv
                pub fn #fid(&self) -> #out {
                    match &self.#fid {
                        ::core::option::Option::Some(x) => x.#as_val,
                        ::core::option::Option::None => #dflt,
                    }
                }
                #[doc = #dh] #selfconv
                pub fn #hybrid(&self) -> ::core::option::Option<&#hty> { self.#fid.as_ref() }
                #[doc = #dset] #selfconv
                pub fn #set(&mut self, value: #pty) { self.#fid = ::core::option::Option::Some(#conv); }
                #[doc = #dhas] #selfconv
                pub fn #has(&self) -> bool { self.#fid.is_some() }
                #[doc = #dclear] #selfconv
                pub fn #clear(&mut self) { self.#fid = ::core::option::Option::None; }
            });
        } else {
            methods.push(quote! {
                #fdoc #selfconv
                pub fn #fid(&self) -> #out { self.#fid.#as_val }
                #[doc = #dh] #selfconv
                pub fn #hybrid(&self) -> &#hty { &self.#fid }
                #[doc = #dset] #selfconv
                pub fn #set(&mut self, value: #pty) { self.#fid = #conv; }
                #[doc = #dclear] #selfconv
                pub fn #clear(&mut self) { self.#fid = ::core::default::Default::default(); }
            });
        }
        let bytes = if is_str { quote!(x.as_bytes()) } else { quote!(x) };
        visits.push((
            num,
            if explicit {
                quote!(if let ::core::option::Option::Some(x) = &self.#fid { v.bytes(#n, #bytes); })
            } else {
                quote!({ let x = &self.#fid; if !x.#as_val.is_empty() { v.bytes(#n, #bytes); } })
            },
        ));
        let (present, guard, val) = if explicit {
            (
                quote!(self.#fid.is_some()),
                quote!(if let ::core::option::Option::Some(x) = &self.#fid),
                bytes,
            )
        } else {
            let p = quote!(!self.#fid.#as_val.is_empty());
            let val = if is_str {
                quote!(self.#fid.as_bytes())
            } else {
                quote!(&self.#fid)
            };
            (p.clone(), quote!(if #p), val)
        };
        encodes.push(EncodeOp {
            num,
            present,
            guard,
            size: quote!(s.bytes(#val);),
            write: quote!(w.bytes(#val)),
        });
        if is_str {
            let vget = match &f.default {
                Some(d) => quote!(self.0.str(#n).map(|s| s.unwrap_or(#d))),
                None => quote!(self.0.str(#n).map(::core::option::Option::unwrap_or_default)),
            };
            view_methods.push(quote! {
                #fdoc
                ///
                /// Fails if the value is not UTF-8.
                #selfconv
                pub fn #fid(&self) -> ::core::result::Result<&'b str, #w::DecodeError> { #vget }
            });
            let read = quote!(self.0.str(#n)?.map(|s| #w::HybridStr::new(s, ctx)));
            to_msg.push(if explicit {
                quote!(m.#fid = #read;)
            } else {
                quote!(m.#fid = #read.unwrap_or_default();)
            });
        } else {
            let vget = match &f.default {
                Some(d) => quote!(self.0.bytes(#n).unwrap_or(#d)),
                None => quote!(self.0.bytes(#n).unwrap_or_default()),
            };
            view_methods.push(quote! {
                #fdoc #selfconv
                pub fn #fid(&self) -> &'b [u8] { #vget }
            });
            to_msg.push(if explicit {
                quote!(m.#fid = self.0.hybrid(#n, ctx);)
            } else {
                quote!(m.#fid = self.0.hybrid(#n, ctx).unwrap_or_default();)
            });
        }
        if explicit {
            view_methods.push(quote! {
                #[doc = #dhas] #selfconv
                pub fn #has(&self) -> bool { self.0.has(#n) }
            });
        }
    }

    /// A singular message field.
    fn emit_singular_message(&self, f: &Field, c: &MessageDescriptor, ids: &FieldNames, out: &mut Emitted) {
        let num = ids.num;
        let FieldNames {
            n,
            fid,
            set,
            clear,
            has,
            mutf,
            pname,
            fdoc,
            selfconv,
            dset,
            dclear,
            dhas,
            ..
        } = ids;
        let Emitted {
            methods,
            view_methods,
            to_msg,
            visits,
            encodes,
            ..
        } = out;
        let cp = self.msg_path(c);
        let cv = self.view_path(c);
        let wrap = |x: TokenStream| {
            if f.boxed {
                quote!(::std::boxed::Box::new(#x))
            } else {
                x
            }
        };
        let new_child = wrap(quote!(#cp::new(ctx)));
        let set_value = wrap(quote!(value));
        let get = if f.boxed {
            quote!(self.#fid.as_deref())
        } else {
            quote!(self.#fid.as_ref())
        };
        let dm = format!(" Mutable access to `{pname}`, set to an empty message first if absent.");
        methods.push(quote! {
            #fdoc #selfconv
            pub fn #fid(&self) -> ::core::option::Option<&#cp<'a>> { #get }
            #[doc = #dm] #selfconv
            pub fn #mutf(&mut self) -> &mut #cp<'a> {
                let ctx = self.ctx;
                self.#fid.get_or_insert_with(|| #new_child)
            }
            #[doc = #dset] #selfconv
            pub fn #set(&mut self, value: #cp<'a>) { self.#fid = ::core::option::Option::Some(#set_value); }
            #[doc = #dhas] #selfconv
            pub fn #has(&self) -> bool { self.#fid.is_some() }
            #[doc = #dclear] #selfconv
            pub fn #clear(&mut self) { self.#fid = ::core::option::Option::None; }
        });
        visits.push((
            num,
            quote!(if let ::core::option::Option::Some(x) = &self.#fid { v.message(#n, x); }),
        ));
        encodes.push(EncodeOp {
            num,
            present: quote!(self.#fid.is_some()),
            guard: quote!(if let ::core::option::Option::Some(x) = &self.#fid),
            size: quote!(s.message(x);),
            write: quote!(w.message(x)),
        });
        view_methods.push(quote! {
            #fdoc #selfconv
            pub fn #fid(&self) -> ::core::option::Option<#cv<'b>> { self.0.message(#n).map(#cv) }
            #[doc = #dhas] #selfconv
            pub fn #has(&self) -> bool { self.0.has(#n) }
        });
        let read = wrap(quote!(#cv(c).to_message(ctx).map_err(|e| self.0.within_field(#n, e))?));
        to_msg.push(quote! {
            if let ::core::option::Option::Some(c) = self.0.message(#n) {
                m.#fid = ::core::option::Option::Some(#read);
            }
        });
    }

    /// A repeated field (not a map).
    fn emit_repeated(&self, ty: &Ty, ids: &FieldNames, out: &mut Emitted) {
        let num = ids.num;
        let FieldNames {
            n,
            fid,
            clear,
            mutf,
            init,
            append,
            pname,
            fdoc,
            selfconv,
            dclear,
            dmut,
            ..
        } = ids;
        let Emitted {
            methods,
            view_methods,
            to_msg,
            visits,
            encodes,
            ..
        } = out;
        let w = &self.w;
        let et = self.value_ty(ty, &quote!('a));
        let (pty, conv) = self.param(ty, &quote!(value));
        let dinit = format!(" Clears `{pname}` and reserves room for `capacity` elements.");
        let dapp = format!(" Appends to `{pname}`.");
        methods.push(quote! {
            #fdoc #selfconv
            pub fn #fid(&self) -> &[#et] { &self.#fid }
            #[doc = #dmut] #selfconv
            pub fn #mutf(&mut self) -> &mut ::std::vec::Vec<#et> { &mut self.#fid }
            #[doc = #dinit] #selfconv
            pub fn #init(&mut self, capacity: usize) { self.#fid.clear(); self.#fid.reserve(capacity); }
            #[doc = #dapp] #selfconv
            pub fn #append(&mut self, value: #pty) { self.#fid.push(#conv); }
            #[doc = #dclear] #selfconv
            pub fn #clear(&mut self) { self.#fid.clear(); }
        });
        visits.push((
            num,
            match ty {
                Ty::Scalar(_) => quote!(if !self.#fid.is_empty() { v.scalars(#n, &self.#fid); }),
                Ty::Bytes | Ty::Str => {
                    quote!(if !self.#fid.is_empty() { v.bytes_list(#n, &self.#fid); })
                }
                Ty::Msg(_) => {
                    quote!(if !self.#fid.is_empty() { v.messages(#n, self.#fid.iter()); })
                }
            },
        ));
        let (size, write) = match ty {
            Ty::Scalar(_) => (quote!(s.scalars(&self.#fid);), quote!(w.scalars(&self.#fid))),
            Ty::Bytes | Ty::Str => (
                quote!(s.bytes_list(&self.#fid);),
                quote!(w.bytes_list(&self.#fid)),
            ),
            Ty::Msg(_) => (
                quote!(s.messages(self.#fid.iter());),
                quote!(w.messages(self.#fid.iter())),
            ),
        };
        encodes.push(EncodeOp {
            num,
            present: quote!(!self.#fid.is_empty()),
            guard: quote!(if !self.#fid.is_empty()),
            size,
            write,
        });
        match ty {
            Ty::Scalar(s) => {
                let t = &s.rust;
                view_methods.push(quote! {
                    #fdoc #selfconv
                    pub fn #fid(&self) -> #w::ScalarList<'b, #t> { self.0.scalars(#n) }
                });
                to_msg.push(quote!(m.#fid = self.0.scalars::<#t>(#n).iter().collect();));
            }
            Ty::Bytes => {
                view_methods.push(quote! {
                    #fdoc #selfconv
                    pub fn #fid(&self) -> #w::BytesList<'b> { self.0.bytes_list(#n) }
                });
                to_msg.push(quote! {
                    m.#fid = self.0.bytes_list(#n).hybrids(ctx).collect();
                });
            }
            Ty::Str => {
                view_methods.push(quote! {
                    #fdoc
                    ///
                    /// Elements are UTF-8 checked when read with `strs()`.
                    #selfconv
                    pub fn #fid(&self) -> #w::BytesList<'b> { self.0.bytes_list(#n) }
                });
                to_msg.push(quote! {
                    for b in self.0.bytes_list(#n).iter() {
                        match ::core::str::from_utf8(b) {
                            ::core::result::Result::Ok(s) => m.#fid.push(#w::HybridStr::new(s, ctx)),
                            ::core::result::Result::Err(_) => {
                                // The runtime names the field and offset of the bad string.
                                #w::DynamicMessage::from_view(&self.0, ctx)?;
                                m.#fid.push(#w::HybridStr::from_string(::std::string::String::from_utf8_lossy(b).into_owned()));
                            }
                        }
                    }
                });
            }
            Ty::Msg(c) => {
                let cv = self.view_path(c);
                view_methods.push(quote! {
                    #fdoc #selfconv
                    pub fn #fid(&self) -> impl ::core::iter::Iterator<Item = #cv<'b>> + use<'b> {
                        let l = self.0.messages(#n);
                        (0..l.len()).filter_map(move |i| l.get(i)).map(#cv)
                    }
                });
                to_msg.push(quote! {
                    for c in self.0.messages(#n).iter() {
                        m.#fid.push(#cv(c).to_message(ctx).map_err(|e| self.0.within_field(#n, e))?);
                    }
                });
            }
        }
    }

    /// A map field.
    fn emit_map(&self, k: &Ty, val: &Ty, ids: &FieldNames, out: &mut Emitted) {
        let num = ids.num;
        let FieldNames {
            n,
            fid,
            b,
            clear,
            mutf,
            insert,
            pname,
            fdoc,
            selfconv,
            dclear,
            dmut,
            ..
        } = ids;
        let Emitted {
            methods,
            view_methods,
            to_msg,
            visits,
            encodes,
            ..
        } = out;
        let w = &self.w;
        let kt = self.value_ty(k, &quote!('a));
        let vt = self.value_ty(val, &quote!('a));
        let (kp, kc) = self.param(k, &quote!(key));
        let (vp, vc) = self.param(val, &quote!(value));
        let dins = format!(" Inserts into `{pname}`, replacing an equal key.");
        // `HybridStr` orders by its bytes only; the pool handle inside is not part of the key.
        let keylint = if matches!(k, Ty::Str) {
            quote!(#[allow(clippy::mutable_key_type)])
        } else {
            quote!()
        };
        methods.push(quote! {
            #fdoc #selfconv
            #keylint
            pub fn #fid(&self) -> &::std::collections::BTreeMap<#kt, #vt> { &self.#fid }
            #[doc = #dmut] #selfconv #keylint
            pub fn #mutf(&mut self) -> &mut ::std::collections::BTreeMap<#kt, #vt> { &mut self.#fid }
            #[doc = #dins] #selfconv
            pub fn #insert(&mut self, key: #kp, value: #vp) {
                self.#fid.insert(#kc, #vc);
            }
            #[doc = #dclear] #selfconv
            pub fn #clear(&mut self) { self.#fid.clear(); }
        });
        if matches!(k, Ty::Str) {
            let getf = ident(&sfx(b, "get"));
            let vts = self.value_ty(val, &quote!('s));
            let dg = format!(" The value of `{pname}` under `key`.");
            methods.push(quote! {
                #[doc = #dg] #selfconv
                #keylint
                pub fn #getf<'s>(&'s self, key: &'s str) -> ::core::option::Option<&'s #vts> {
                    let map: &'s ::std::collections::BTreeMap<#w::HybridStr<'s>, #vts> = &self.#fid;
                    map.get(&#w::HybridStr::new(key, #w::Context::copy_only()))
                }
            });
        }
        visits.push((num, quote!(#w::visit_map(v, #n, &self.#fid);)));
        let entries = quote!(self.#fid.iter().map(|(k, v)| #w::MapEntry(k, v)));
        encodes.push(EncodeOp {
            num,
            present: quote!(!self.#fid.is_empty()),
            guard: quote!(if !self.#fid.is_empty()),
            size: quote!(s.messages(#entries);),
            write: quote!(w.messages(#entries)),
        });
        // View: (key, value) pairs.
        let read = |t: &Ty, num: u32| -> (TokenStream, TokenStream, TokenStream) {
            let num = Literal::u32_unsuffixed(num);
            // (item type, read in iterator, read for to_message)
            match t {
                Ty::Scalar(s) => {
                    let r = &s.rust;
                    (
                        quote!(#r),
                        quote!(e.scalar::<#r>(#num).unwrap_or_default()),
                        quote!(e.scalar::<#r>(#num).unwrap_or_default()),
                    )
                }
                Ty::Bytes => (
                    quote!(&'b [u8]),
                    quote!(e.bytes(#num).unwrap_or_default()),
                    quote!(e.hybrid(#num, ctx).unwrap_or_default()),
                ),
                Ty::Str => (
                    quote!(&'b str),
                    quote!(e.str(#num).ok().flatten().unwrap_or_default()),
                    quote!(#w::HybridStr::new(
                        e.str(#num).map_err(|err| self.0.within_field(#n, err))?.unwrap_or_default(),
                        ctx,
                    )),
                ),
                Ty::Msg(c) => {
                    let cv = self.view_path(c);
                    let cp = self.msg_path(c);
                    (
                        quote!(::core::option::Option<#cv<'b>>),
                        quote!(e.message(#num).map(#cv)),
                        quote!(match e.message(#num) {
                            ::core::option::Option::Some(c) => #cv(c)
                                .to_message(ctx)
                                .map_err(|err| self.0.within_field(#n, e.within_field(#num, err)))?,
                            ::core::option::Option::None => #cp::new(ctx),
                        }),
                    )
                }
            }
        };
        let (kit, kread, kmsg) = read(k, 1);
        let (vit, vread, vmsg) = read(val, 2);
        let strings = matches!(k, Ty::Str) || matches!(val, Ty::Str);
        if strings {
            let checks = [(k, 1u32), (val, 2u32)]
                .into_iter()
                .filter(|(t, _)| matches!(t, Ty::Str))
                .map(|(_, num)| {
                    let num = Literal::u32_unsuffixed(num);
                    quote!(e.str(#num).map_err(|err| self.0.within_field(#n, err))?;)
                });
            view_methods.push(quote! {
                #fdoc
                ///
                /// Entries in ascending key order; fails if a string is not UTF-8.
                #selfconv
                pub fn #fid(&self) -> ::core::result::Result<impl ::core::iter::Iterator<Item = (#kit, #vit)> + use<'b>, #w::DecodeError> {
                    let l = self.0.messages(#n);
                    for e in l.iter() { #(#checks)* }
                    ::core::result::Result::Ok((0..l.len()).filter_map(move |i| l.get(i)).map(|e| (#kread, #vread)))
                }
            });
        } else {
            view_methods.push(quote! {
                #fdoc
                ///
                /// Entries in ascending key order.
                #selfconv
                pub fn #fid(&self) -> impl ::core::iter::Iterator<Item = (#kit, #vit)> + use<'b> {
                    let l = self.0.messages(#n);
                    (0..l.len()).filter_map(move |i| l.get(i)).map(|e| (#kread, #vread))
                }
            });
        }
        to_msg.push(quote! {
            for e in self.0.messages(#n).iter() {
                let key = #kmsg;
                let value = #vmsg;
                m.#fid.insert(key, value);
            }
        });
    }

    /// A member of a oneof (its enum variant's accessors).
    fn emit_oneof_member(
        &self,
        f: &Field,
        o: usize,
        ty: &Ty,
        fields: &[Field],
        ids: &FieldNames,
        out: &mut Emitted,
    ) {
        let num = ids.num;
        let FieldNames {
            n,
            fid,
            set,
            has,
            pname,
            fdoc,
            selfconv,
            ..
        } = ids;
        let Emitted {
            methods,
            view_methods,
            to_msg,
            visits,
            encodes,
            ..
        } = out;
        let w = &self.w;
        let oid = ident(&self.oneof_base(fields, o));
        let path = self.oneof_path(o);
        let var = ident(&f.variant);
        let (pty, conv) = self.param(ty, &quote!(value));
        let conv = if f.boxed {
            quote!(::std::boxed::Box::new(#conv))
        } else {
            conv
        };
        let pat = quote!(::core::option::Option::Some(#path::#var(x)));
        let (out, get) = match ty {
            Ty::Scalar(s) => {
                let t = &s.rust;
                let d = f
                    .default
                    .clone()
                    .unwrap_or_else(|| quote!(::core::default::Default::default()));
                (quote!(#t), quote!(if let #pat = &self.#oid { *x } else { #d }))
            }
            Ty::Bytes => {
                let d = f.default.clone().unwrap_or_else(|| quote!(&[]));
                (
                    quote!(&[u8]),
                    quote!(if let #pat = &self.#oid { x.as_slice() } else { #d }),
                )
            }
            Ty::Str => {
                let d = f.default.clone().unwrap_or_else(|| quote!(""));
                (
                    quote!(&str),
                    quote!(if let #pat = &self.#oid { x.as_str() } else { #d }),
                )
            }
            Ty::Msg(c) => {
                let cp = self.msg_path(c);
                (
                    quote!(::core::option::Option<&#cp<'a>>),
                    quote!(if let #pat = &self.#oid { ::core::option::Option::Some(x) } else { ::core::option::Option::None }),
                )
            }
        };
        let dset1 = format!(
            " Sets oneof `{}` to `{pname}`.",
            f.desc
                .containing_oneof()
                .map(|o| o.name().to_string())
                .unwrap_or_default()
        );
        let dhas1 = format!(" Whether the oneof holds `{pname}`.");
        methods.push(quote! {
            #fdoc #selfconv
            pub fn #fid(&self) -> #out { #get }
            #[doc = #dset1] #selfconv
            pub fn #set(&mut self, value: #pty) { self.#oid = ::core::option::Option::Some(#path::#var(#conv)); }
            #[doc = #dhas1] #selfconv
            pub fn #has(&self) -> bool { ::core::matches!(&self.#oid, ::core::option::Option::Some(#path::#var(_))) }
        });
        visits.push((
            num,
            match ty {
                Ty::Scalar(_) => quote!(if let #pat = &self.#oid { v.scalar(#n, *x); }),
                Ty::Bytes => quote!(if let #pat = &self.#oid { v.bytes(#n, x); }),
                Ty::Str => quote!(if let #pat = &self.#oid { v.bytes(#n, x.as_bytes()); }),
                Ty::Msg(_) => quote!(if let #pat = &self.#oid { v.message(#n, x); }),
            },
        ));
        let (size, write) = match ty {
            Ty::Scalar(_) => (quote!(), quote!(w.scalar(*x))),
            Ty::Bytes => (quote!(s.bytes(x);), quote!(w.bytes(x))),
            Ty::Str => (quote!(s.bytes(x.as_bytes());), quote!(w.bytes(x.as_bytes()))),
            Ty::Msg(_) => (quote!(s.message(x);), quote!(w.message(x))),
        };
        encodes.push(EncodeOp {
            num,
            present: quote!(::core::matches!(&self.#oid, ::core::option::Option::Some(#path::#var(_)))),
            guard: quote!(if let #pat = &self.#oid),
            size,
            write,
        });
        let has_view = quote! {
            #[doc = #dhas1] #selfconv
            pub fn #has(&self) -> bool { self.0.has(#n) }
        };
        match ty {
            Ty::Scalar(s) => {
                let t = &s.rust;
                let vget = match &f.default {
                    Some(d) => quote!(self.0.scalar(#n).unwrap_or(#d)),
                    None => quote!(self.0.scalar(#n).unwrap_or_default()),
                };
                view_methods.push(quote!(#fdoc #selfconv pub fn #fid(&self) -> #t { #vget } #has_view));
                to_msg.push(quote! {
                    if let ::core::option::Option::Some(x) = self.0.scalar::<#t>(#n) {
                        m.#oid = ::core::option::Option::Some(#path::#var(x));
                    }
                });
            }
            Ty::Bytes => {
                let vget = match &f.default {
                    Some(d) => quote!(self.0.bytes(#n).unwrap_or(#d)),
                    None => quote!(self.0.bytes(#n).unwrap_or_default()),
                };
                view_methods.push(quote!(#fdoc #selfconv pub fn #fid(&self) -> &'b [u8] { #vget } #has_view));
                to_msg.push(quote! {
                    if let ::core::option::Option::Some(x) = self.0.hybrid(#n, ctx) {
                        m.#oid = ::core::option::Option::Some(#path::#var(x));
                    }
                });
            }
            Ty::Str => {
                let vget = match &f.default {
                    Some(d) => quote!(self.0.str(#n).map(|s| s.unwrap_or(#d))),
                    None => quote!(self.0.str(#n).map(::core::option::Option::unwrap_or_default)),
                };
                view_methods.push(quote! {
                    #fdoc
                    ///
                    /// Fails if the value is not UTF-8.
                    #selfconv
                    pub fn #fid(&self) -> ::core::result::Result<&'b str, #w::DecodeError> { #vget }
                    #has_view
                });
                to_msg.push(quote! {
                    if let ::core::option::Option::Some(s) = self.0.str(#n)? {
                        m.#oid = ::core::option::Option::Some(#path::#var(#w::HybridStr::new(s, ctx)));
                    }
                });
            }
            Ty::Msg(c) => {
                let cv = self.view_path(c);
                view_methods.push(quote! {
                    #fdoc #selfconv
                    pub fn #fid(&self) -> ::core::option::Option<#cv<'b>> { self.0.message(#n).map(#cv) }
                    #has_view
                });
                to_msg.push(quote! {
                    if let ::core::option::Option::Some(c) = self.0.message(#n) {
                        let c = #cv(c).to_message(ctx).map_err(|e| self.0.within_field(#n, e))?;
                        m.#oid = ::core::option::Option::Some(#path::#var(::std::boxed::Box::new(c)));
                    }
                });
            }
        }
    }

    fn message(&self, names: &super::MessageNames) -> Result<TokenStream, BuildError> {
        let w = &self.w;
        let src = &self.ctx.sources[self.msg.parent_file().name()];
        let name = ident(&names.name);
        let view = ident(&names.view);
        let desc = ident(&names.desc);
        let full = self.msg.full_name();
        let mdoc = doc(src.comment(self.msg.path()), &format!("Message `{full}`."));
        let fields = self.fields();
        let desc_static = self.desc_static(&self.msg, &self.cur);

        let mut struct_fields = Vec::new();
        let mut inits = Vec::new();
        let mut methods = Vec::new();
        let mut view_methods = Vec::new();
        let mut to_msg = Vec::new();
        let mut visits: Vec<(u32, TokenStream)> = Vec::new();
        let mut encodes: Vec<EncodeOp> = Vec::new();
        let mut oneof_enums = Vec::new();
        let mut len_lint = false;

        // Oneofs: one enum and one struct field each.
        for o in self.msg.oneofs().filter(|o| !o.is_synthetic()) {
            let base = self.oneof_base(&fields, oneof_index(&o));
            len_lint |= base == "len";
            let fid = ident(&base);
            let path = self.oneof_path(oneof_index(&o));
            let lt = Self::oneof_has_lifetime(&o);
            let ty = if lt { quote!(#path<'a>) } else { quote!(#path) };
            struct_fields.push(quote!(#fid: ::core::option::Option<#ty>,));
            inits.push(quote!(#fid: ::core::option::Option::None,));
            let set = format_ident!("set_{}", base);
            let clear = format_ident!("clear_{}", base);
            let mutf = ident(&sfx(&base, "mut"));
            let oname = o.name();
            let d1 = format!(" Which member of oneof `{oname}` is set, if any.");
            let d2 = format!(" Sets oneof `{oname}`.");
            let d3 = format!(" Clears oneof `{oname}`.");
            let d4 = format!(" Mutable access to oneof `{oname}`.");
            methods.push(quote! {
                #[doc = #d1]
                pub fn #fid(&self) -> ::core::option::Option<&#ty> { self.#fid.as_ref() }
                #[doc = #d2]
                pub fn #set(&mut self, value: #ty) { self.#fid = ::core::option::Option::Some(value); }
                #[doc = #d3]
                pub fn #clear(&mut self) { self.#fid = ::core::option::Option::None; }
                #[doc = #d4]
                pub fn #mutf(&mut self) -> &mut ::core::option::Option<#ty> { &mut self.#fid }
            });
            // The enum, in the nested module.
            let ename = ident(&self.ctx.message(&self.msg).oneofs[&oneof_index(&o)]);
            let inner_gen = Gen {
                ctx: self.ctx,
                msg: self.msg.clone(),
                cur: self.inner.clone(),
                inner: self.inner.clone(),
                w: self.w.clone(),
                rt: self.rt.clone(),
            };
            let mut variants = Vec::new();
            let mut vnames = Vec::new();
            for f in fields
                .iter()
                .filter(|f| matches!(f.shape, Shape::Oneof(i) if i == oneof_index(&o)))
            {
                let v = ident(&f.variant);
                vnames.push(f.variant.clone());
                let t = inner_gen.value_ty(&f.ty, &quote!('a));
                let t = if f.boxed { quote!(::std::boxed::Box<#t>) } else { t };
                let vd = doc(
                    src.comment(f.desc.path()),
                    &format!("Field `{}` = {}.", f.desc.name(), f.number),
                );
                variants.push(quote!(#vd #v(#t),));
            }
            let generics = if lt { quote!(<'a>) } else { quote!() };
            let od = doc(src.comment(o.path()), &format!("Oneof `{}`.", o.full_name()));
            let lint = if enums::variant_names_lint(
                &self.ctx.message(&self.msg).oneofs[&oneof_index(&o)],
                &vnames,
            ) {
                quote!(#[allow(clippy::enum_variant_names)])
            } else {
                quote!()
            };
            oneof_enums.push(quote! {
                #od
                #[derive(Debug, Clone)]
                #lint
                pub enum #ename #generics { #(#variants)* }
            });
        }

        let mut required_checks: Vec<TokenStream> = Vec::new();
        for f in &fields {
            len_lint |= f.base == "len";
            let ids = FieldNames::new(f, src);
            let FieldNames { fid, .. } = &ids;
            let mut out = Emitted::default();

            if f.desc.is_required() && !matches!(f.shape, Shape::Oneof(_)) {
                let full = f.desc.full_name().to_string();
                required_checks.push(quote! {
                    if self.#fid.is_none() {
                        return ::core::option::Option::Some(#full);
                    }
                });
            }
            if !matches!(f.shape, Shape::Oneof(_)) {
                let st = self.storage_ty(f);
                struct_fields.push(quote!(#fid: #st,));
                inits.push(quote!(#fid: ::core::default::Default::default(),));
            }

            match (&f.shape, &f.ty) {
                (Shape::Implicit | Shape::Explicit, Ty::Scalar(s)) => {
                    self.emit_singular_scalar(f, s, &ids, &mut out)
                }
                (Shape::Implicit | Shape::Explicit, Ty::Bytes | Ty::Str) => {
                    self.emit_singular_bytes(f, &ids, &mut out)
                }
                (Shape::Explicit | Shape::Implicit, Ty::Msg(c)) => {
                    self.emit_singular_message(f, c, &ids, &mut out)
                }
                (Shape::Repeated, ty) => self.emit_repeated(ty, &ids, &mut out),
                (Shape::Map(k, val), _) => self.emit_map(k, val, &ids, &mut out),
                (Shape::Oneof(o), ty) => self.emit_oneof_member(f, *o, ty, &fields, &ids, &mut out),
            }
            struct_fields.extend(out.struct_fields);
            inits.extend(out.inits);
            methods.extend(out.methods);
            view_methods.extend(out.view_methods);
            to_msg.extend(out.to_msg);
            visits.extend(out.visits);
            encodes.extend(out.encodes);
        }

        visits.sort_by_key(|(n, _)| *n);
        // A message without fields visits nothing: its visitor is unused (named `_v`, so that
        // generated code compiles without warnings).
        let visitor = if visits.is_empty() {
            format_ident!("_v")
        } else {
            format_ident!("v")
        };
        let visits = visits.into_iter().map(|(_, t)| t);
        encodes.sort_by_key(|e| e.num);
        let direct = direct_encoder(w, &encodes);

        // Nested module: nested messages and enums, map entry descriptors, oneof enums.
        let nested = match &names.nested {
            Some(sub) => {
                let sub_id = ident(sub);
                let mut items = Vec::new();
                for c in self.msg.child_messages() {
                    if c.is_map_entry() {
                        items.push(self.desc_static(&c, &self.inner));
                    } else {
                        items.push(generate(self.ctx, &c, &self.inner)?);
                    }
                }
                for e in self.msg.child_enums() {
                    items.push(enums::generate(self.ctx, &e));
                }
                items.extend(oneof_enums);
                let lint = if self.cur.last() == Some(sub) {
                    quote!(#[allow(clippy::module_inception)])
                } else {
                    quote!()
                };
                let d = format!(" Nested types of `{full}`.");
                quote! {
                    #[doc = #d]
                    #lint
                    pub mod #sub_id { #(#items)* }
                }
            }
            None => quote!(),
        };
        let len_lint = if len_lint {
            quote!(#[allow(clippy::len_without_is_empty)])
        } else {
            quote!()
        };
        let missing_required = if required_checks.is_empty() {
            quote!()
        } else {
            quote! {
                fn missing_required(&self) -> ::core::option::Option<&'static str> {
                    #(#required_checks)*
                    ::core::option::Option::None
                }
            }
        };
        let vdoc = format!(" A validated, zero-copy view of an encoded [`{}`].", names.name);
        let tm = if to_msg.is_empty() {
            quote!(let m = #name::new(ctx);)
        } else {
            quote!(let mut m = #name::new(ctx);)
        };

        Ok(quote! {
            #desc_static

            #mdoc
            #[derive(Debug, Clone)]
            pub struct #name<'a> {
                ctx: &'a #w::Context,
                #(#struct_fields)*
            }

            #len_lint
            impl<'a> #name<'a> {
                /// An empty message whose `bytes`/`string` fields follow `ctx`'s copy-or-reference rule.
                pub fn new(ctx: &'a #w::Context) -> Self {
                    #name { ctx, #(#inits)* }
                }

                /// The context that decides copy or reference for this message's fields.
                pub fn ctx(&self) -> &'a #w::Context {
                    self.ctx
                }

                #(#methods)*

            }

            impl<'a> #w::Message<'a> for #name<'a> {
                type View<'b> = #view<'b>;

                fn desc() -> &'static #w::MessageDesc<'static> {
                    &#desc
                }

                fn view_of(view: #w::View<'_>) -> ::core::option::Option<#view<'_>> {
                    ::core::ptr::eq(view.desc(), &#desc).then_some(#view(view))
                }
            }

                        impl<'a> #w::Encode<'a> for #name<'a> {
                fn visit<V: #w::Visitor<'a>>(&self, #visitor: &mut V) {
                    #(#visits)*
                }
                #missing_required
                #direct
            }

            impl<'a> #w::FieldValue<'a> for #name<'a> {
                fn visit_as<V: #w::Visitor<'a>>(&self, field: u32, v: &mut V) {
                    v.message(field, self);
                }
            }

            #[doc = #vdoc]
            #[derive(Debug, Clone, Copy)]
            pub struct #view<'b>(pub(crate) #w::View<'b>);

            #len_lint
            impl<'b> #view<'b> {
                #(#view_methods)*
            }

            impl<'b> #w::MessageView<'b> for #view<'b> {
                type Message = #name<'b>;

                fn view(&self) -> &#w::View<'b> {
                    &self.0
                }

                fn to_message(&self, ctx: &'b #w::Context) -> ::core::result::Result<#name<'b>, #w::DecodeError> {
                    #tm
                    #(#to_msg)*
                    ::core::result::Result::Ok(m)
                }
            }

            #nested
        })
    }
}

/// `size_into` and `write_into` of a message's `Encode` impl: straight-line code over its
/// fields (in ascending number order) that calls the runtime's `Sizes` and `Writer` helpers.
fn direct_encoder(w: &TokenStream, ops: &[EncodeOp]) -> TokenStream {
    // Presence chunk groups the fields fall in, ascending; each field's group index and bit.
    let mut groups: Vec<u32> = ops.iter().map(|e| e.num / 64).collect();
    groups.dedup();
    let g = Literal::usize_unsuffixed(groups.len());
    let n = Literal::usize_unsuffixed(ops.len());
    let any = !ops.is_empty();
    let sets: Vec<TokenStream> = ops
        .iter()
        .map(|e| {
            let gi =
                Literal::usize_unsuffixed(groups.iter().position(|&x| x == e.num / 64).unwrap_or_default());
            let num = Literal::u32_unsuffixed(e.num);
            quote!(h.set(#gi, #w::layout::bit_of(#num));)
        })
        .collect();
    let sizes = ops.iter().zip(&sets).map(|(e, set)| {
        let EncodeOp {
            present, guard, size, ..
        } = e;
        if size.is_empty() {
            quote!(if #present { #set })
        } else {
            quote!(#guard { #set #size })
        }
    });
    let presence = ops.iter().zip(&sets).map(|(e, set)| {
        let present = &e.present;
        quote!(if #present { #set })
    });
    let writes = ops.iter().zip(&sets).map(|(e, set)| {
        let EncodeOp { guard, write, .. } = e;
        quote!(#guard { #set e.push(#write); })
    });
    let groups = groups.iter().map(|&x| Literal::u32_unsuffixed(x));
    let m = if any { quote!(mut) } else { quote!() };
    quote! {
        #[inline(always)]
        fn size_into(&self, s: &mut #w::Sizes) -> #w::Shape {
            let #m h = #w::Header::<#g>::new();
            #(#sizes)*
            s.header(h.shape())
        }

        #[inline(always)]
        fn write_into(&self, w: &mut #w::Writer<'_>) -> u64 {
            const GROUPS: [u32; #g] = [#(#groups),*];
            let r = w.reserve_header(#w::Encode::missing_required(self), || {
                let #m h = #w::Header::<#g>::new();
                #(#presence)*
                h.shape()
            });
            let #m h = #w::Header::<#g>::new();
            let #m e = #w::Entries::<#n>::new();
            #(#writes)*
            w.header(r, &GROUPS, &h, &e)
        }
    }
}

/// The names and docs one field's generated items use.
struct FieldNames {
    num: u32,
    n: Literal,
    fid: proc_macro2::Ident,
    b: String,
    set: proc_macro2::Ident,
    clear: proc_macro2::Ident,
    has: proc_macro2::Ident,
    mutf: proc_macro2::Ident,
    init: proc_macro2::Ident,
    append: proc_macro2::Ident,
    insert: proc_macro2::Ident,
    hybrid: proc_macro2::Ident,
    pname: String,
    fdoc: TokenStream,
    selfconv: TokenStream,
    dset: String,
    dclear: String,
    dhas: String,
    dmut: String,
}

impl FieldNames {
    fn new(f: &Field, src: &SourceInfo) -> FieldNames {
        let num = f.number;
        let n = Literal::u32_unsuffixed(num);
        let fid = ident(&f.base);
        let b = &f.base;
        let set = format_ident!("set_{}", b);
        let clear = format_ident!("clear_{}", b);
        let has = format_ident!("has_{}", b);
        let mutf = ident(&sfx(b, "mut"));
        let init = format_ident!("init_{}", b);
        let append = format_ident!("append_{}", b);
        let insert = format_ident!("insert_{}", b);
        let hybrid = ident(&sfx(b, "hybrid"));
        let pname = f.desc.name().to_string();
        let fdoc = doc(src.comment(f.desc.path()), &format!("Field `{pname}` = {n}."));
        let selfconv = if ["to_", "into_", "from_"].iter().any(|p| b.starts_with(p)) {
            quote!(#[allow(clippy::wrong_self_convention)])
        } else {
            quote!()
        };
        let dset = format!(" Sets `{pname}`.");
        let dclear = format!(" Clears `{pname}`.");
        let dhas = format!(" Whether `{pname}` is set.");
        let dmut = format!(" Mutable access to `{pname}`.");
        FieldNames {
            num,
            n,
            fid,
            b: b.clone(),
            set,
            clear,
            has,
            mutf,
            init,
            append,
            insert,
            hybrid,
            pname,
            fdoc,
            selfconv,
            dset,
            dclear,
            dhas,
            dmut,
        }
    }
}

/// What one field adds to its message's generated code.
#[derive(Default)]
struct Emitted {
    struct_fields: Vec<TokenStream>,
    inits: Vec<TokenStream>,
    methods: Vec<TokenStream>,
    view_methods: Vec<TokenStream>,
    to_msg: Vec<TokenStream>,
    visits: Vec<(u32, TokenStream)>,
    encodes: Vec<EncodeOp>,
}

/// One field in the straight-line encoder (`size_into` / `write_into`): how to test its
/// presence, and what to call on the runtime's `Sizes` (`s`) and `Writer` (`w`) when present.
struct EncodeOp {
    num: u32,
    /// A `bool` expression: whether the field is present.
    present: TokenStream,
    /// `if ...` that binds the value as `x` when present (or `present` itself, as `if ...`).
    guard: TokenStream,
    /// Statement adding the field's sizes to `s` (empty for a singular scalar).
    size: TokenStream,
    /// Expression placing the field with `w` and returning its entry.
    write: TokenStream,
}
