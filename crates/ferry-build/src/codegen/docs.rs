//! Source locations: line numbers for errors, comments for generated docs.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use prost_types::FileDescriptorProto;
use quote::quote;

/// The source info of one file, by descriptor path.
pub(crate) struct SourceInfo {
    locations: HashMap<Vec<i32>, (u32, String)>,
}

impl SourceInfo {
    pub(crate) fn new(file: &FileDescriptorProto) -> Self {
        let mut locations = HashMap::new();
        for loc in file.source_code_info.iter().flat_map(|s| &s.location) {
            let line = loc.span.first().map_or(0, |l| *l as u32 + 1);
            let comment = loc.leading_comments.clone().unwrap_or_default();
            locations.entry(loc.path.clone()).or_insert((line, comment));
        }
        SourceInfo { locations }
    }

    /// 1-based line of the element at `path`, 0 when unknown.
    pub(crate) fn line(&self, path: &[i32]) -> u32 {
        self.locations.get(path).map_or(0, |l| l.0)
    }

    /// The leading comment of the element at `path`.
    pub(crate) fn comment(&self, path: &[i32]) -> &str {
        self.locations.get(path).map_or("", |l| l.1.as_str())
    }
}

/// `#[doc]` attributes: the `.proto` comment if there is one, else `fallback`.
///
/// Comments are prose written for protobuf, not rustdoc: lines are trimmed (so indented text
/// is not a code block, hence no doctest), and comments that look like Markdown structure
/// (fences, lists, headings, HTML, links) are kept verbatim in a `text` block.
pub(crate) fn doc(comment: &str, fallback: &str) -> TokenStream {
    let lines: Vec<&str> = comment.lines().map(str::trim).collect();
    let start = lines.iter().position(|l| !l.is_empty());
    let end = lines.iter().rposition(|l| !l.is_empty());
    let lines: Vec<String> = match (start, end) {
        (Some(s), Some(e)) => {
            let body = &lines[s..=e];
            let special = body.iter().any(|l| {
                l.starts_with(['-', '*', '+', '#', '<', '>', '|', '`', '=', '~'])
                    || l.contains(['[', ']', '<', '>', '`', '\t'])
                    || l.split_once(". ")
                        .is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()))
            });
            if special {
                let raw: Vec<&str> = comment.lines().map(str::trim_end).collect();
                let raw = &raw[raw.iter().position(|l| !l.trim().is_empty()).unwrap_or(0)..];
                let raw = &raw[..raw
                    .iter()
                    .rposition(|l| !l.trim().is_empty())
                    .map_or(0, |e| e + 1)];
                let mut v = vec![" ```text".to_string()];
                v.extend(raw.iter().map(|l| format!(" {}", l.replace("```", "'''"))));
                v.push(" ```".to_string());
                v
            } else {
                body.iter()
                    .map(|l| {
                        if l.is_empty() {
                            String::new()
                        } else {
                            format!(" {l}")
                        }
                    })
                    .collect()
            }
        }
        _ => vec![format!(" {fallback}")],
    };
    quote!(#(#[doc = #lines])*)
}
