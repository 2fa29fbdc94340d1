#!/bin/sh
# Aged filesystems and fill levels: the figures of aged against fresh filesystems, as root.
#   1. aged (geriatrix-like) against fresh, tree:quick-shallow and ffsb-large-write (8 MiB
#      files: without size= its files shrink to the free space, less on the aged one), on ext4,
#      xfs and btrfs, with the verdicts (`fsbench compare`) and each aging's time, bytes,
#      utilisation and free-space probe before → after (the "Aged and filled" section);
#   2. the fill-level curve of tree:quick on ext4 at 0, 50 and 90% used;
#   3. the churn's own speed: geriatrix-like aging of a tmpfs (no disk), in place.
# RUNS (default 3), IMAGE_SIZE (default 6G: room for quick-shallow's 255,000 inodes at 70%),
# DB (default a fresh file in /var/tmp), FSBENCH (default target/release/fsbench), TREE and
# FILL_TREE (the tree workloads of 1 and 2) and FFSB (default ffsb-large-write:size=8m, 1 GiB in
# all: it must fit what 70% leaves); smaller ones prove the script works quickly.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FSBENCH=${FSBENCH:-$ROOT/target/release/fsbench}
RUNS=${RUNS:-3}
IMAGE_SIZE=${IMAGE_SIZE:-6G}
TREE=${TREE:-tree:quick-shallow}
FILL_TREE=${FILL_TREE:-tree:quick}
FFSB=${FFSB:-ffsb-large-write:size=8m}
DB=${DB:-$(mktemp /var/tmp/fsbench-aging.XXXXXX.db)}
run() { "$FSBENCH" --db "$DB" run -q "$@"; }
# The newest suite: `list` shows the most recent first.
last_id() { "$FSBENCH" --db "$DB" list | grep -oE '^│ *[0-9]+' | head -1 | tr -dc '0-9'; }

echo "== 1. aged against fresh ($RUNS runs, $IMAGE_SIZE images; results in $DB)"
run --fs ext4 --fs ext4:age=geriatrix-like --fs xfs --fs xfs:age=geriatrix-like \
    --fs btrfs --fs btrfs:age=geriatrix-like -w "$TREE" -w "$FFSB" \
    --runs "$RUNS" --image-size "$IMAGE_SIZE" --purpose "Aged (geriatrix-like) against fresh"
ID=$(last_id)
for fs in ext4 xfs btrfs; do
    "$FSBENCH" --db "$DB" compare "$ID:$fs" "$ID:$fs age=geriatrix-like"
done

echo "== 2. fill-level curve"
run --fs ext4 --fill 0,50,90 -w "$FILL_TREE" --runs "$RUNS" --purpose "Fill-level curve"

echo "== 3. the churn on tmpfs (in place, no disk): its time and bytes written"
run --fs tmpfs --age geriatrix-like -w tree:dirs=2,files=1,size=1,levels=1 --runs 1 \
    --image-size 2G --purpose "Aging speed" 2>&1 | grep -E "aged \(|Aged" || true
