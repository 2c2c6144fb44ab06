#!/usr/bin/env bash
# git_fetch_cache.sh NAME URL BRANCH DIR: clones URL (branch BRANCH) into DIR,
# or, when DIR already holds that clone, fetches and checks out the newest
# BRANCH. Shared by download_kernelbench.sh and download_pypto.sh.
set -euo pipefail
name="$1" url="$2" branch="$3" dir="$4"

command -v git >/dev/null 2>&1 || { echo "error: git is not installed (apt-get install git)" >&2; exit 1; }
offline() {
  echo "error: cannot reach $url to $1 $name; check the network (or a proxy: https_proxy=...)," >&2
  echo "       or set ${name^^}_URL to a mirror you can reach" >&2
  exit 1
}
mkdir -p "$(dirname "$dir")"
if [ -d "$dir/.git" ]; then
  origin="$(git -C "$dir" remote get-url origin 2>/dev/null || true)"
  [ "$origin" = "$url" ] || git -C "$dir" remote set-url origin "$url"
  echo "updating $name in $dir"
  git -C "$dir" fetch --quiet origin "$branch" || offline update
  git -C "$dir" checkout --quiet -B "$branch" FETCH_HEAD
elif [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  echo "error: $dir exists, is not empty and is not a git clone; move it away or choose another directory" >&2
  exit 1
else
  echo "cloning $name into $dir"
  git clone --quiet --branch "$branch" "$url" "$dir" || offline clone
fi
echo "$name ready: $dir at $(git -C "$dir" rev-parse --short HEAD) ($branch)"
