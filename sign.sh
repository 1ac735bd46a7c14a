#!/bin/sh
# usage: sign.sh OPTIONS SOURCE [extra]
/work/main/.build/debug/emojiart images sign --key-file /tmp/attack/k.env --base http://127.0.0.1:${SVC:-9200} "$@"
