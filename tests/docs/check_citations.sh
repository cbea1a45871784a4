#!/usr/bin/env bash
# The repository stands on its own: every docs/*.md file (and #section) that a tracked file
# cites exists, relative links between the documents resolve, and no file names a path of a
# build machine or a document kept outside the repository.
# usage: tests/docs/check_citations.sh [SOURCE_DIR]      exit 0 when clean, 1 with a list
set -uo pipefail
cd "${1:-$(dirname "$0")/../..}" || exit 2

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files)
else
  mapfile -t files < <(find . -path ./build -prune -o -path ./.git -prune -o -type f -print \
                         | sed 's|^\./||')
fi
# Text files only (grep -I skips binary files).
mapfile -t text_files < <(printf '%s\0' "${files[@]}" | xargs -0 grep -IlE '.' 2>/dev/null)

failures=0
fail() { echo "$1"; failures=$((failures + 1)); }

# GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
anchors_of() {
  grep -E '^#{1,6} ' "$1" | sed -E 's/^#+ +//' | tr 'A-Z' 'a-z' \
    | sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'
}

check_target() {  # FILE CITED_PATH ANCHOR
  local from=$1 path=$2 anchor=$3
  if [ ! -f "$path" ]; then
    fail "$from: cites $path${anchor:+#$anchor}, which does not exist"
  elif [ -n "$anchor" ] && ! anchors_of "$path" | grep -qxF "$anchor"; then
    fail "$from: cites $path#$anchor, but $path has no such section"
  fi
}

# 1. A docs/ file (with an optional #anchor) cited from any file. A docs/ path inside another
#    path, right after an owner/repo name ("NVIDIA-NeMo/Megatron-Bridge docs/x.md") or after a
#    possessive ("NeMo's docs/x.md") is another repository's and is skipped.
cite='([^[:space:]]+[[:space:]]+)?[^[:space:]]*docs/[A-Za-z0-9_-]+\.md(#[a-z0-9_-]+)?'
while IFS= read -r hit; do
  from=${hit%%:*} hit=${hit#*:}
  [[ "$hit" =~ ^(.*)(docs/[A-Za-z0-9_-]+\.md)(#[a-z0-9_-]+)?$ ]] || continue
  before=${BASH_REMATCH[1]} path=${BASH_REMATCH[2]} anchor=${BASH_REMATCH[3]#\#}
  [[ "$before" == */ ]] && continue
  prev=${before%"${before##*[![:space:]\`(\"]}"}  # drop trailing blanks, quotes, parentheses
  prev=${prev##*[[:space:](\"\`]}
  [[ "$prev" =~ ^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+){1,2}[\`,:]?$ && "$prev" != */docs* ]] && continue
  [[ "$prev" == *"'s" ]] && continue  # "the repository's docs/x.md", "NeMo's docs/x.md"
  check_target "$from" "$path" "$anchor"
done < <(printf '%s\0' "${text_files[@]}" | xargs -0 grep -oHE "$cite" 2>/dev/null)

# 2. Relative links between the documents: [text](name.md#anchor) inside docs/.
for f in docs/*.md; do
  [ -f "$f" ] || continue
  while IFS= read -r link; do
    target=${link%%#*} anchor=""
    [[ "$link" == *#* ]] && anchor=${link#*#}
    case "$target" in
      http*|/*) continue ;;
      "") check_target "$f" "$f" "$anchor" ;;
      *) check_target "$f" "$(dirname "$f")/$target" "$anchor" ;;
    esac
  done < <(grep -oE '\]\([^)]+\)' "$f" | sed -E 's/^\]\(//; s/\)$//')
done

# 3. Nothing outside the repository: machine paths and documents that are not in it.
outside='/wor''k/|\.\./sha''red|(^|[^a-z/])(CALIBRA''TION|FAU''LTS|DES''IGN|PE''ERS|STY''LE)\.md|CONTRIBUTING-HEL''PERS'
printf '%s\0' "${text_files[@]}" | xargs -0 grep -nE "$outside" /dev/null \
  | sed 's/^/outside the repository: /' > /tmp/.check_citations.$$
if [ -s /tmp/.check_citations.$$ ]; then
  cat /tmp/.check_citations.$$
  failures=$((failures + $(wc -l < /tmp/.check_citations.$$)))
fi
rm -f /tmp/.check_citations.$$

if [ "$failures" -ne 0 ]; then
  echo "$failures citation problem(s)"
  exit 1
fi
echo "citations: ${#text_files[@]} files checked, every cited document exists"
