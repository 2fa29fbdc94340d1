//! The io workload's options for fio's strided zones.

use crate::options::{OptKind, OptionDef};

pub(super) const ZONEMODE: OptionDef = OptionDef::new(
    "zonemode",
    OptKind::Choice(&["none", "strided", "zbd"]),
    "strided: zonesize bytes in each zone, zones zonerange long, zoneskip apart",
);

pub(super) const ZONESIZE: OptionDef = OptionDef::new(
    "zonesize",
    OptKind::Size,
    "bytes moved in a zone before the next",
);

pub(super) const ZONERANGE: OptionDef = OptionDef::new(
    "zonerange",
    OptKind::Size,
    "a zone's length (default zonesize)",
);

pub(super) const ZONESKIP: OptionDef =
    OptionDef::new("zoneskip", OptKind::Size, "bytes skipped between zones");
