package search

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"hash/fnv"
	"strings"
)

// A cursor names the last seq a page examined and the query it belongs to.
// It is base64url of: version(1) | query hash(8) | seq(8) | crc32(4).
// A cursor from another query, or altered by hand, is refused.

const cursorVersion = 1

func encodeCursor(qh uint64, seq uint64) string {
	b := make([]byte, 0, 21)
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, qh)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	return base64.RawURLEncoding.EncodeToString(b)
}

var errOtherQuery = badf("cursor", "cursor belongs to a different query (needle, scope or filters changed); start again without a cursor")

func decodeCursor(s string, qh uint64) (uint64, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 21 || b[0] != cursorVersion {
		return 0, badf("cursor", "not a cursor this server issued; start again without a cursor")
	}
	if binary.BigEndian.Uint32(b[17:]) != crc32.ChecksumIEEE(b[:17]) {
		return 0, badf("cursor", "cursor is damaged; start again without a cursor")
	}
	if binary.BigEndian.Uint64(b[1:]) != qh {
		return 0, errOtherQuery
	}
	return binary.BigEndian.Uint64(b[9:]), nil
}

// queryHash identifies the parts of a request that a cursor depends on.
func queryHash(parts ...string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(strings.Join(parts, "\x00")))
	return h.Sum64()
}
