//! Compiles the BPF program (`src/capture.bpf.c`) with clang into `$OUT_DIR/capture.bpf.o`.
//! Without clang or libbpf's headers the object is empty and the crate says why at run time
//! (`fsbench capture` then falls back to strace): fsbench builds on machines without them.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let src = "src/capture.bpf.c";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=CLANG");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let object = out.join("capture.bpf.o");
    let unbuilt = match compile(src, &object) {
        Ok(()) => String::new(),
        Err(why) => {
            println!("cargo:warning=the bpf tracer is not built: {why}");
            std::fs::write(&object, b"").expect("writing the empty BPF object");
            why
        }
    };
    println!("cargo:rustc-env=FSBENCH_BPF_UNBUILT={unbuilt}");
}

/// Compiles `src` into `object`, or says why it cannot be: a missing tool or header is a
/// reason, a program that does not compile is a failure of the build.
fn compile(src: &str, object: &Path) -> Result<(), String> {
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
    if Command::new(&clang).arg("--version").output().is_err() {
        return Err(format!(
            "it was built without {clang} (scripts/install-deps.sh installs clang)"
        ));
    }
    if !Path::new("/usr/include/bpf/bpf_helpers.h").exists() {
        return Err(
            "it was built without libbpf's headers (scripts/install-deps.sh \
                    installs libbpf-dev)"
                .into(),
        );
    }
    // linux/bpf.h includes asm/types.h, which is below the target's multiarch directory.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = format!("/usr/include/{arch}-linux-gnu");
    let status = Command::new(&clang)
        .args(["-target", "bpf", "-O2", "-g", "-Wall", "-Werror"])
        .arg(format!("-I{multiarch}"))
        .args(["-c", src, "-o"])
        .arg(object)
        .status()
        .map_err(|e| format!("cannot run {clang}: {e}"))?;
    assert!(status.success(), "{clang} failed on {src}");
    Ok(())
}
