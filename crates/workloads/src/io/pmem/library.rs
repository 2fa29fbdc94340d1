//! PMDK's libraries as fio's engines call them, loaded the first time a job needs one: fio
//! links them, fsbench loads them at run time (libloading), so that a machine without them
//! builds and runs every other engine and refuses these naming what to install.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

/// The environment variables naming another build of each library to load (as fio's
/// `FIO_PMEM_LIB` does for its dev-dax engine).
pub(crate) const LIBPMEMBLK_ENV: &str = "FSBENCH_LIBPMEMBLK";
pub(crate) const LIBPMEM_ENV: &str = "FSBENCH_LIBPMEM";

/// libpmemblk's calls fio's pmemblk engine makes (libpmemblk.h, PMDK 1.x).
pub(crate) struct Blk {
    pub open: unsafe extern "C" fn(*const c_char, usize) -> *mut c_void,
    pub create: unsafe extern "C" fn(*const c_char, usize, usize, libc::mode_t) -> *mut c_void,
    pub close: unsafe extern "C" fn(*mut c_void),
    pub bsize: unsafe extern "C" fn(*mut c_void) -> usize,
    pub nblock: unsafe extern "C" fn(*mut c_void) -> usize,
    pub read: unsafe extern "C" fn(*mut c_void, *mut c_void, libc::c_longlong) -> c_int,
    pub write: unsafe extern "C" fn(*mut c_void, *const c_void, libc::c_longlong) -> c_int,
    errormsg: unsafe extern "C" fn() -> *const c_char,
}

/// libpmem's calls fio's libpmem engine makes (libpmem.h, PMDK 1.x).
pub(crate) struct Pmem {
    pub map_file: unsafe extern "C" fn(
        *const c_char,
        usize,
        c_int,
        libc::mode_t,
        *mut usize,
        *mut c_int,
    ) -> *mut c_void,
    pub unmap: unsafe extern "C" fn(*mut c_void, usize) -> c_int,
    pub memcpy: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_uint) -> *mut c_void,
    pub drain: unsafe extern "C" fn(),
    errormsg: unsafe extern "C" fn() -> *const c_char,
}

/// `pmem_map_file`'s flag: the file made (at the length asked) where missing.
pub(crate) const PMEM_FILE_CREATE: c_int = 1;
/// `pmem_memcpy`'s flags.
pub(crate) const PMEM_F_MEM_NODRAIN: c_uint = 1;
pub(crate) const PMEM_F_MEM_NONTEMPORAL: c_uint = 1 << 1;
pub(crate) const PMEM_F_MEM_TEMPORAL: c_uint = 1 << 2;

/// libpmemblk, loaded once per process; `Err`: why it cannot be, for the job's refusal.
pub(crate) fn blk() -> Result<&'static Blk, String> {
    static BLK: OnceLock<Result<Blk, String>> = OnceLock::new();
    let library = (LIBPMEMBLK_ENV, "libpmemblk.so.1", "libpmemblk1");
    once(&BLK, library, |lib| {
        // SAFETY: each symbol has libpmemblk.h's type.
        unsafe {
            Ok(Blk {
                open: symbol(lib, b"pmemblk_open\0")?,
                create: symbol(lib, b"pmemblk_create\0")?,
                close: symbol(lib, b"pmemblk_close\0")?,
                bsize: symbol(lib, b"pmemblk_bsize\0")?,
                nblock: symbol(lib, b"pmemblk_nblock\0")?,
                read: symbol(lib, b"pmemblk_read\0")?,
                write: symbol(lib, b"pmemblk_write\0")?,
                errormsg: symbol(lib, b"pmemblk_errormsg\0")?,
            })
        }
    })
}

/// libpmem, loaded once per process; `Err`: why it cannot be.
pub(crate) fn pmem() -> Result<&'static Pmem, String> {
    static PMEM: OnceLock<Result<Pmem, String>> = OnceLock::new();
    once(&PMEM, (LIBPMEM_ENV, "libpmem.so.1", "libpmem1"), |lib| {
        // SAFETY: each symbol has libpmem.h's type.
        unsafe {
            Ok(Pmem {
                map_file: symbol(lib, b"pmem_map_file\0")?,
                unmap: symbol(lib, b"pmem_unmap\0")?,
                memcpy: symbol(lib, b"pmem_memcpy\0")?,
                drain: symbol(lib, b"pmem_drain\0")?,
                errormsg: symbol(lib, b"pmem_errormsg\0")?,
            })
        }
    })
}

/// What `cell` holds, made the first time: the library (its environment variable, file
/// name and Debian package) loaded and its calls found by `calls`.
fn once<T>(
    cell: &'static OnceLock<Result<T, String>>,
    (env, name, package): (&str, &str, &str),
    calls: impl FnOnce(&'static libloading::Library) -> Result<T, String>,
) -> Result<&'static T, String> {
    let loaded = cell.get_or_init(|| calls(load(env, name, package)?));
    loaded.as_ref().map_err(Clone::clone)
}

impl Blk {
    /// libpmemblk's message for its last failure in this thread.
    pub(crate) fn last_error(&self) -> String {
        // SAFETY: libpmemblk's thread-local message, a C string (or null).
        unsafe { message((self.errormsg)()) }
    }
}

impl Pmem {
    /// libpmem's message for its last failure in this thread.
    pub(crate) fn last_error(&self) -> String {
        // SAFETY: libpmem's thread-local message, a C string (or null).
        unsafe { message((self.errormsg)()) }
    }
}

/// The library `name` (or the one the environment variable `env` names), kept loaded for
/// the process's life; `Err` names it and the Debian package that has it.
fn load(env: &str, name: &str, package: &str) -> Result<&'static libloading::Library, String> {
    let path = std::env::var_os(env).unwrap_or_else(|| name.into());
    // SAFETY: PMDK's libraries run no initialiser that fsbench could upset (their
    // constructors read their own environment variables and set up their locks).
    let lib = unsafe { libloading::Library::new(&path) }.map_err(|e| {
        format!(
            "needs PMDK's {name}, which fio links, and it could not be loaded ({e}); on Debian: apt install {package}"
        )
    })?;
    Ok(Box::leak(Box::new(lib)))
}

/// The function `name` of `lib`, as the type its header gives it.
///
/// # Safety
/// `T` must be the symbol's C function type.
unsafe fn symbol<T: Copy>(lib: &'static libloading::Library, name: &[u8]) -> Result<T, String> {
    // SAFETY: the caller gives the symbol's type; the library outlives the pointer.
    unsafe { lib.get::<T>(name) }.map(|s| *s).map_err(|e| {
        let name = String::from_utf8_lossy(&name[..name.len() - 1]);
        format!("needs PMDK's {name}, which the library loaded lacks ({e})")
    })
}

/// A C string a library returned, as text.
///
/// # Safety
/// `text` is null or a NUL-terminated string.
unsafe fn message(text: *const c_char) -> String {
    if text.is_null() {
        return String::new();
    }
    // SAFETY: the caller's promise.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}
