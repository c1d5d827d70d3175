package geval

import (
	"github.com/go-json-experiment/json"
)

// reply is the scoring reply as the kind reads it.
type reply struct {
	Reason string `json:"reason"`
	Score  *int   `json:"score"`
}

// judgeReply is how the kind reads a judge's JSON: a model that spells a
// name in capitals ("Score") is understood, as encoding/json understood
// it; a name given twice is refused, since readers disagree on which one
// wins (the host, locating the score, might take the other).
var judgeReply = json.MatchCaseInsensitiveNames(true)

// decodeReply decodes the scoring reply.
func decodeReply(b []byte) (reply, error) {
	var r reply
	err := json.Unmarshal(b, &r, judgeReply)
	return r, err
}
