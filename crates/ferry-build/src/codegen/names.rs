//! Rust names for proto names: case conversion, keywords, and deterministic disambiguation.

use std::collections::HashSet;

use heck::{ToShoutySnakeCase, ToSnakeCase, ToUpperCamelCase};
use proc_macro2::{Ident, Span};

/// Words that cannot be identifiers, in editions 2015 to 2024 (strict and reserved).
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate", "do", "dyn",
    "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let", "loop",
    "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return", "self", "Self",
    "static", "struct", "super", "trait", "true", "try", "type", "typeof", "unsafe", "unsized", "use",
    "virtual", "where", "while", "yield",
];

/// Keywords that cannot even be raw identifiers: they get a trailing `_` instead.
const NOT_RAW: &[&str] = &["self", "Self", "super", "crate", "_"];

/// `snake_case`, never empty, never a non-raw keyword.
pub(crate) fn snake(name: &str) -> String {
    fix(name.to_snake_case(), "field")
}

/// `UpperCamelCase`, never empty.
pub(crate) fn camel(name: &str) -> String {
    fix(name.to_upper_camel_case(), "Type")
}

/// `SHOUTY_SNAKE_CASE`, never empty.
pub(crate) fn shouty(name: &str) -> String {
    fix(name.to_shouty_snake_case(), "VALUE")
}

fn fix(s: String, empty: &str) -> String {
    let s = if s.is_empty() { empty.to_string() } else { s };
    let s = if s.starts_with(|c: char| c.is_ascii_digit()) {
        format!("_{s}")
    } else {
        s
    };
    if NOT_RAW.contains(&s.as_str()) {
        format!("{s}_")
    } else {
        s
    }
}

/// The identifier for an already converted name, raw (`r#type`) if it is a keyword.
pub(crate) fn ident(name: &str) -> Ident {
    if KEYWORDS.contains(&name) {
        Ident::new_raw(name, Span::call_site())
    } else {
        Ident::new(name, Span::call_site())
    }
}

/// Names already taken in one Rust namespace of one module (or one `impl`).
#[derive(Debug, Default, Clone)]
pub(crate) struct Scope {
    used: HashSet<String>,
}

impl Scope {
    pub(crate) fn with(names: &[&str]) -> Self {
        Scope {
            used: names.iter().map(|s| s.to_string()).collect(),
        }
    }

    pub(crate) fn reserve(&mut self, name: &str) {
        self.used.insert(name.to_string());
    }

    /// Claims `base`, or `base` + `sep` + 2, 3, ... (the first free one); deterministic in call order.
    pub(crate) fn claim(&mut self, base: &str, sep: &str) -> String {
        self.claim_set(base, sep, |b| vec![b.to_string()])
    }

    /// Claims every name `derive(b)` yields for the first `b` in `base`, `base{sep}2`, ... whose
    /// derived names are all free; returns that `b`.
    pub(crate) fn claim_set(
        &mut self,
        base: &str,
        sep: &str,
        derive: impl Fn(&str) -> Vec<String>,
    ) -> String {
        let mut n = 1;
        loop {
            let b = if n == 1 {
                base.to_string()
            } else {
                format!("{base}{sep}{n}")
            };
            let names = derive(&b);
            if names.iter().all(|x| !self.used.contains(x)) {
                self.used.extend(names);
                return b;
            }
            n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(snake("fooBar"), "foo_bar");
        assert_eq!(snake("self"), "self_");
        assert_eq!(snake("type"), "type");
        assert_eq!(ident("type").to_string(), "r#type");
        assert_eq!(camel("foo_bar"), "FooBar");
        assert_eq!(camel("Self"), "Self_");
        assert_eq!(shouty("FooBar"), "FOO_BAR");
    }

    #[test]
    fn collisions_are_numbered_in_order() {
        let mut s = Scope::default();
        assert_eq!(s.claim("foo_bar", "_"), "foo_bar");
        assert_eq!(s.claim("foo_bar", "_"), "foo_bar_2");
        assert_eq!(
            s.claim_set("x", "_", |b| vec![b.to_string(), format!("set_{b}")]),
            "x"
        );
        s.reserve("set_y");
        assert_eq!(
            s.claim_set("y", "_", |b| vec![b.to_string(), format!("set_{b}")]),
            "y_2"
        );
    }
}
