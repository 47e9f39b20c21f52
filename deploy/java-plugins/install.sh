#!/bin/sh
# Installs the Java plugins a list names (deploy/java-plugins/plugins.txt: "<group:artifact:version>
# <sha512>" per line, # comments) into a plugin path folder, each with `headrace plugins install
# --sha512`: an image's build fails, naming the line, on a coordinate without its digest, one
# Maven cannot resolve, or a jar whose digest differs.
#   install.sh LIST FOLDER
set -eu
list=$1
folder=$2
mkdir -p "$folder"
line=0
while IFS= read -r entry || [ -n "$entry" ]; do
    line=$((line + 1))
    entry=${entry%%#*}
    set -- $entry
    [ $# -eq 0 ] && continue
    if [ $# -ne 2 ]; then
        echo "$list:$line: expected '<group:artifact:version> <sha512>', got: $*" >&2
        exit 1
    fi
    headrace plugins install --plugin-path "$folder" "$1" --sha512 "$2" \
        || { echo "$list:$line: $1 was not installed" >&2; exit 1; }
done < "$list"
