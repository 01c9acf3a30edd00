//! Enums: a `#[repr(i32)]` Rust enum per proto enum; aliases become associated consts.
//! Fields store the `i32`, so values the schema does not name survive a round trip.

use std::collections::HashSet;

use heck::ToShoutySnakeCase;
use proc_macro2::{Literal, TokenStream};
use prost_reflect::EnumDescriptor;
use quote::quote;

use super::Context;
use super::docs::doc;
use super::names::{Scope, camel, ident, shouty};

/// The variant name of each value: the enum's name is stripped as a prefix (`COLOR_RED` in
/// `Color` is `Red`) when every value has it and nothing collides, as prost does.
fn variant_names(e: &EnumDescriptor, values: &[Val]) -> Vec<String> {
    let prefix = format!("{}_", e.name().to_shouty_snake_case());
    let stripped: Option<Vec<String>> = values
        .iter()
        .map(|v| {
            let rest = v.name.strip_prefix(&prefix)?;
            rest.starts_with(|c: char| c.is_ascii_alphabetic())
                .then(|| camel(rest))
        })
        .collect();
    let mut scope = Scope::default();
    match stripped {
        Some(s) if s.iter().collect::<HashSet<_>>().len() == s.len() => {
            s.iter().map(|n| scope.claim(n, "")).collect()
        }
        _ => values.iter().map(|v| scope.claim(&camel(&v.name), "")).collect(),
    }
}

/// Whether clippy's `enum_variant_names` would object to names taken from the schema.
pub(crate) fn variant_names_lint(enum_name: &str, variants: &[String]) -> bool {
    fn words(s: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in s.chars() {
            match out.last_mut() {
                Some(w) if !c.is_ascii_uppercase() => w.push(c),
                _ => out.push(c.to_string()),
            }
        }
        out
    }
    if variants
        .iter()
        .any(|v| v.starts_with(enum_name) || v.ends_with(enum_name))
    {
        return true;
    }
    if variants.len() < 3 {
        return false;
    }
    let all_words: Vec<Vec<String>> = variants.iter().map(|v| words(v)).collect();
    let first = all_words.iter().map(|w| w.first()).collect::<HashSet<_>>().len() == 1;
    let last = all_words.iter().map(|w| w.last()).collect::<HashSet<_>>().len() == 1;
    first || last
}

/// One value, in declaration order (the pool's `values()` is sorted by number).
struct Val {
    name: String,
    number: i32,
    path: Vec<i32>,
}

pub(crate) fn generate(ctx: &Context<'_>, e: &EnumDescriptor) -> TokenStream {
    let src = &ctx.sources[e.parent_file().name()];
    let name = ident(&ctx.enum_names(e).name);
    let values: Vec<Val> = e
        .enum_descriptor_proto()
        .value
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut path = e.path().to_vec();
            path.extend([2, i as i32]);
            Val {
                name: v.name().to_string(),
                number: v.number(),
                path,
            }
        })
        .collect();
    let names = variant_names(e, &values);
    let mut seen = HashSet::new();
    let mut variants = Vec::new();
    let mut aliases = Vec::new();
    let mut arms = Vec::new();
    let mut strs = Vec::new();
    let mut first_variant = None;
    let mut alias_scope = Scope::default();
    for (v, vname) in values.iter().zip(&names) {
        let number = v.number;
        let lit = Literal::i32_unsuffixed(number);
        let vdoc = doc(src.comment(&v.path), &format!("`{}` = {number}.", v.name));
        let vident = ident(vname);
        let proto_name = &v.name;
        if seen.insert(number) {
            let default = if first_variant.is_none() {
                quote!(#[default])
            } else {
                quote!()
            };
            first_variant.get_or_insert_with(|| vident.clone());
            variants.push(quote!(#vdoc #default #vident = #lit,));
            arms.push(quote!(#lit => ::core::option::Option::Some(#name::#vident),));
            strs.push(quote!(#name::#vident => #proto_name,));
        } else {
            // An alias: same number as an earlier value.
            let target = values
                .iter()
                .zip(&names)
                .find(|(t, _)| t.number == number)
                .map(|(_, n)| ident(n));
            let cname = ident(&alias_scope.claim(&shouty(&v.name), "_"));
            aliases.push(quote!(#vdoc pub const #cname: #name = #name::#target;));
        }
    }
    let edoc = doc(src.comment(e.path()), &format!("Enum `{}`.", e.full_name()));
    let unique: Vec<String> = names
        .iter()
        .zip(&values)
        .filter(|(_, v)| {
            values
                .iter()
                .find(|w| w.number == v.number)
                .is_some_and(|w| w.name == v.name)
        })
        .map(|(n, _)| n.clone())
        .collect();
    let lint = if variant_names_lint(&ctx.enum_names(e).name, &unique) {
        quote!(#[allow(clippy::enum_variant_names)])
    } else {
        quote!()
    };
    quote! {
        #edoc
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        #[repr(i32)]
        #lint
        pub enum #name {
            #(#variants)*
        }

        impl #name {
            #(#aliases)*

            /// The value with this number, if the schema names one.
            pub fn from_i32(value: i32) -> ::core::option::Option<Self> {
                match value {
                    #(#arms)*
                    _ => ::core::option::Option::None,
                }
            }

            /// The name of the value in the `.proto` file.
            pub fn as_str_name(&self) -> &'static str {
                match self {
                    #(#strs)*
                }
            }
        }

        impl ::core::convert::From<#name> for i32 {
            fn from(value: #name) -> i32 {
                value as i32
            }
        }

        impl ::core::convert::TryFrom<i32> for #name {
            type Error = i32;
            fn try_from(value: i32) -> ::core::result::Result<Self, i32> {
                Self::from_i32(value).ok_or(value)
            }
        }
    }
}
