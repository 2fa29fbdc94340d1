//! JSON written as fio's json.c writes it: keys in fio's order, `"key" : value`, two spaces
//! per level, floats with six decimals (`%f`), so that fsbench's fio JSON reads like fio's.

use std::fmt::Write;

/// A JSON value with its keys in the order given.
pub(super) enum J {
    Int(i128),
    Float(f64),
    Str(String),
    Obj(Vec<(String, J)>),
    Arr(Vec<J>),
}

impl J {
    pub(super) fn int(v: impl Into<i128>) -> J {
        J::Int(v.into())
    }

    pub(super) fn str(v: impl Into<String>) -> J {
        J::Str(v.into())
    }

    /// The document as fio prints it, with a final newline.
    pub(super) fn print(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0);
        out.push('\n');
        out
    }

    fn write(&self, out: &mut String, level: usize) {
        let indent = |out: &mut String, n: usize| out.push_str(&"  ".repeat(n));
        match self {
            J::Int(v) => {
                let _ = write!(out, "{v}");
            }
            J::Float(v) => {
                let _ = write!(out, "{v:.6}");
            }
            J::Str(s) => escape(out, s),
            J::Obj(pairs) => {
                out.push_str("{\n");
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    indent(out, level + 1);
                    escape(out, k);
                    out.push_str(" : ");
                    v.write(out, level + 1);
                }
                out.push('\n');
                indent(out, level);
                out.push('}');
            }
            J::Arr(values) => {
                out.push_str("[\n");
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    indent(out, level + 1);
                    v.write(out, level + 1);
                }
                out.push('\n');
                indent(out, level);
                out.push(']');
            }
        }
    }
}

/// A JSON string (fio escapes quotes and backslashes; control characters are escaped too).
fn escape(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_as_fio_prints_and_read_back() {
        let doc = J::Obj(vec![
            ("fio version".into(), J::str("x\"y")),
            (
                "jobs".into(),
                J::Arr(vec![J::Obj(vec![("iops".into(), J::Float(1999.0005))])]),
            ),
            ("n".into(), J::int(3u32)),
        ]);
        let text = doc.print();
        assert!(text.starts_with("{\n  \"fio version\" : \"x\\\"y\",\n  \"jobs\" : [\n    {\n      \"iops\" : 1999.000500\n    }\n  ],"), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["n"], 3);
        assert_eq!(back["jobs"][0]["iops"], 1999.0005);
    }
}
