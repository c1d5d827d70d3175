package conversation_test

import (
	"fmt"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/plugins/internal/scripted"
)

// The judge these tests script is plugins/internal/scripted's, shared by
// the first-party kinds' tests.
type (
	reply    = scripted.Reply
	scripter = scripted.Host
)

func prompt(r abi.JudgeRequest) string { return scripted.Prompt(r) }

// answer replies content to requests of purpose whose prompt holds every
// string in contains.
func answer(purpose, content string, contains ...string) reply {
	return reply{Purpose: purpose, Contains: contains,
		Resp: abi.JudgeResponse{Content: content, JSON: []byte(content), Usage: scripted.Usage}}
}

// fails answers requests of purpose with err.
func fails(purpose string, err *abi.Error) reply {
	return reply{Purpose: purpose, Resp: abi.JudgeResponse{Error: err}}
}

func verdict(purpose, v, reason string, contains ...string) reply {
	return answer(purpose, fmt.Sprintf(`{"reason":%q,"verdict":%q}`, reason, v), contains...)
}
