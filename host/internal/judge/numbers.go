package judge

import (
	"github.com/agentanvil/anvil/host/internal/judgeconfig"
	"github.com/agentanvil/anvil/score"
)

// numberTokens is the rule this judge's scores are weighted by: its
// number_tokens, with auto resolved from the model family. It is the
// judge's, never read from a reply.
func (j *Judge) numberTokens() score.NumberTokens {
	return score.NumberTokens(j.cfg.NumberTokens.Resolve(j.cfg.Model))
}

// numberTokensKey is what the cache key records of the rule for a
// logprob-weighted score: nothing when the rule is the model family's own
// (the model is already in the key, and so keys of existing recordings
// stay valid), the rule when number_tokens overrides the family, so that
// changing the setting never serves a score weighted by the other rule.
func (j *Judge) numberTokensKey() string {
	rule := j.numberTokens()
	if rule == score.NumberTokens(judgeconfig.NumberTokensFor(j.cfg.Model)) {
		return ""
	}
	return string(rule)
}
