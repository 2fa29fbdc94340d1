//! Tar archives built by hand, so that malformed ones are possible.

/// Writes a header block's checksum (its field counted as spaces), as ustar does.
pub fn set_checksum(h: &mut [u8]) {
    let sum: u32 = h[..512]
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                32
            } else {
                b as u32
            }
        })
        .sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    h[155] = b' ';
}

/// One tar header block: ustar, with the fields given; the checksum computed unless `bad_sum`.
pub fn header(name: &[u8], kind: u8, size_field: &[u8], link: &[u8], bad_sum: bool) -> Vec<u8> {
    let mut h = vec![0u8; 512];
    h[..name.len().min(100)].copy_from_slice(&name[..name.len().min(100)]);
    h[100..107].copy_from_slice(b"0000644");
    h[108..115].copy_from_slice(b"0000000");
    h[116..123].copy_from_slice(b"0000000");
    h[124..124 + size_field.len()].copy_from_slice(size_field);
    h[136..147].copy_from_slice(b"00000000000");
    h[156] = kind;
    h[157..157 + link.len().min(100)].copy_from_slice(&link[..link.len().min(100)]);
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    set_checksum(&mut h);
    if bad_sum {
        h[150] ^= 1;
    }
    h
}

pub fn octal_size(n: usize) -> Vec<u8> {
    format!("{n:011o}").into_bytes()
}

/// A member with its data, padded to blocks.
pub fn member(name: &str, kind: u8, data: &[u8], link: &str) -> Vec<u8> {
    let mut out = header(
        name.as_bytes(),
        kind,
        &octal_size(data.len()),
        link.as_bytes(),
        false,
    );
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out
}

pub fn file(name: &str, data: &str) -> Vec<u8> {
    member(name, b'0', data.as_bytes(), "")
}
pub fn directory(name: &str) -> Vec<u8> {
    member(name, b'5', b"", "")
}
pub fn symlink(name: &str, to: &str) -> Vec<u8> {
    member(name, b'2', b"", to)
}
pub fn hardlink(name: &str, to: &str) -> Vec<u8> {
    member(name, b'1', b"", to)
}
/// A GNU long-name (`L`) or long-link (`K`) extension member.
pub fn gnu_long(kind: u8, value: &str) -> Vec<u8> {
    let mut data = value.as_bytes().to_vec();
    data.push(0);
    member("././@LongLink", kind, &data, "")
}
/// A PAX extended header with the given records.
pub fn pax(records: &[(&str, &str)]) -> Vec<u8> {
    let mut data = Vec::new();
    for (k, v) in records {
        let body = format!(" {k}={v}\n");
        let mut len = body.len() + 1;
        while format!("{len}{body}").len() != len {
            len += 1;
        }
        data.extend_from_slice(format!("{len}{body}").as_bytes());
    }
    member("PaxHeader", b'x', &data, "")
}
pub fn end(mut parts: Vec<Vec<u8>>) -> Vec<u8> {
    parts.push(vec![0; 1024]);
    parts.concat()
}
