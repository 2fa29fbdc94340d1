//! The extended-attribute calls as trace calls: the file (by path, by descriptor, or by a
//! directory descriptor and a path for the `*xattrat` forms of Linux 6.13), the attribute's
//! name as PATH2, A the value's length (setxattr) or the buffer's size (getxattr,
//! listxattr), B whether a last symlink is followed, FD2 setxattr's flags. Only the bpf
//! tracer's records reach here: strace's `-s 0` prints no name (`""...`), so its lines of
//! them are counted by name (`named.rs`).

use super::syntax::{self, Arg};
use super::{Parser, Skip};
use crate::replay::trace::{Call, Kind};

/// The kernel's largest value and list (linux/limits.h): a larger buffer is cut to it, a
/// larger value refused (`E2BIG`), so A is kept at most one past it, as the kernel sees it.
const XATTR_SIZE_MAX: i64 = 65_536;

/// How a form of the call names its file.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// A path whose last symlink is followed (getxattr).
    Path,
    /// A path whose last symlink is not (lgetxattr).
    NoFollow,
    /// A descriptor (fgetxattr).
    Fd,
    /// A directory descriptor, a path and `AT_*` flags (getxattrat).
    At,
}

/// The xattr call `name`: its kind and form.
pub(super) fn xattr_call(name: &str) -> Option<(Kind, Form)> {
    let (rest, kind) = [
        ("getxattr", Kind::GetXattr),
        ("setxattr", Kind::SetXattr),
        ("listxattr", Kind::ListXattr),
        ("removexattr", Kind::RemoveXattr),
    ]
    .into_iter()
    .find_map(|(base, kind)| Some((name.strip_suffix(base)?, kind)))
    .or_else(|| {
        let base = name.strip_suffix("at")?;
        let (kind, _) = xattr_call(base).filter(|(_, f)| *f == Form::Path)?;
        Some(("at", kind))
    })?;
    let form = match rest {
        "" => Form::Path,
        "l" => Form::NoFollow,
        "f" => Form::Fd,
        "at" => Form::At,
        _ => return None,
    };
    Some((kind, form))
}

fn num(args: &[Arg], i: usize) -> Result<i64, Skip> {
    syntax::num(args, i).ok_or(Skip::Unreadable)
}

impl Parser {
    /// Fills xattr call `name`'s fields (its file is already in `call`).
    pub(super) fn xattr_fields(
        &mut self,
        name: &str,
        args: &[Arg],
        call: &mut Call,
    ) -> Result<(), Skip> {
        let (kind, form) = xattr_call(name).ok_or(Skip::Unreadable)?;
        call.kind = Some(kind);
        let at = form == Form::At;
        if kind != Kind::ListXattr {
            // A name the tracer could not read from the program's memory.
            let Some(Arg::Str(attr)) = args.get(if at { 3 } else { 1 }) else {
                return Err(Skip::PathUnread);
            };
            call.path2.clone_from(attr);
        }
        // The `*at` forms' value and flags are in `struct xattr_args`.
        let (size, flags) = match (kind, at) {
            (Kind::GetXattr | Kind::SetXattr, true) => {
                let how = args.get(4).filter(|a| a.field("size").is_some());
                let how = how.ok_or(Skip::PathUnread)?;
                (how.field("size"), how.field("flags"))
            }
            (Kind::GetXattr, false) => (Some(num(args, 3)?), None),
            (Kind::SetXattr, false) => (Some(num(args, 3)?), Some(num(args, 4)?)),
            (Kind::ListXattr, _) => (Some(num(args, if at { 4 } else { 2 })?), None),
            _ => (None, None),
        };
        // A value past the largest stays one: refused as it was.
        let most = XATTR_SIZE_MAX + i64::from(kind == Kind::SetXattr);
        call.a = size.unwrap_or(0).clamp(0, most) as u64;
        if kind == Kind::SetXattr {
            call.fd2 = flags.unwrap_or(0) as i32;
        }
        call.b = match form {
            Form::NoFollow => 0,
            Form::At => i64::from(num(args, 2)? & i64::from(libc::AT_SYMLINK_NOFOLLOW) == 0),
            Form::Path | Form::Fd => 1,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_is_named() {
        let named = [
            ("lgetxattr", Kind::GetXattr, Form::NoFollow),
            ("fremovexattr", Kind::RemoveXattr, Form::Fd),
            ("listxattrat", Kind::ListXattr, Form::At),
            ("setxattr", Kind::SetXattr, Form::Path),
        ];
        for (name, kind, form) in named {
            assert!(xattr_call(name) == Some((kind, form)), "{name}");
        }
        for not in [
            "xattr",
            "getxattrs",
            "fgetxattrat",
            "lsetxattrat",
            "xgetxattr",
            "at",
        ] {
            assert!(xattr_call(not).is_none(), "{not}");
        }
    }
}
