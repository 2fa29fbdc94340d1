//! What a filesystem may lack that a workload needs. Built-in drivers are probed at run time
//! (their support depends on mkfs options: ext4 without extents has no fallocate); a user
//! driver declares its own in its `[[driver]]` table, and fsbench holds it to that.

/// One capability a `[[driver]]` table declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    Fiemap,
    Fallocate,
    Direct,
    HardLinks,
}

impl Capability {
    pub const ALL: [Capability; 4] = [
        Capability::Fiemap,
        Capability::Fallocate,
        Capability::Direct,
        Capability::HardLinks,
    ];

    /// The `[[driver]]` key that declares it.
    pub fn key(self) -> &'static str {
        match self {
            Capability::Fiemap => "fiemap",
            Capability::Fallocate => "fallocate",
            Capability::Direct => "o_direct",
            Capability::HardLinks => "hard_links",
        }
    }

    /// Its name in messages.
    pub fn what(self) -> &'static str {
        match self {
            Capability::Fiemap => "FIEMAP",
            Capability::Fallocate => "fallocate",
            Capability::Direct => "O_DIRECT",
            Capability::HardLinks => "hard links",
        }
    }
}
