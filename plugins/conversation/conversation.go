// Package conversation provides Anvil's first-party metric kinds over
// conversational test cases (ABI minor 4: a case with turns), each a
// verdict count over parts of the conversation:
//
//   - "knowledge_retention": the judge extracts the facts each user turn
//     gives, then judges each assistant turn that follows some facts:
//     does it forget or contradict them (yes: attrition) or not (no)?
//     Score = no / verdicts.
//   - "role_adherence" (also needs chatbot_role): the judge lists the
//     assistant turns that break the role. Score = (A − out of
//     character) / A over the A assistant turns.
//   - "conversation_completeness": the judge extracts what the user came
//     to do (intentions), then judges each: was it met in the
//     conversation? Score = met / intentions.
//   - "turn_relevancy": the conversation is split into interactions (a
//     user's turns and the assistant's answers), and for each, a sliding
//     window of the last `window` interactions (DeepEval's default 10) is
//     judged: is the last assistant turn relevant in that context?
//     Score = relevant / windows.
//
// They keep DeepEval's formulas and verdict semantics (deepeval/metrics/
// <metric>/) with these differences, each deliberate:
//   - the independent judgements of a case (one per user turn, per
//     assistant turn, per intention, per window) are one judge batch the
//     host runs concurrently, not a call after another;
//   - the reason is built from the failing verdicts (their turn, text and
//     the judge's reason), with no extra call;
//   - a verdict that is not "yes" or "no", or a reply that is not the
//     JSON asked for, is a judge_error naming it, never a dropped verdict;
//   - role_adherence counts each assistant turn the judge lists once, and
//     a listed turn that is not the assistant's not at all, with a
//     warning for each (DeepEval counts every entry, repeated or not, so
//     a judge's slip lowers its score);
//   - nothing to judge scores 1 with a reason saying so in all four
//     (DeepEval's knowledge retention scores 0 when no assistant turn
//     follows any fact, failing a conversation for having nothing to
//     forget);
//   - knowledge is extracted from user turns only (DeepEval: every turn
//     that is not the assistant's, which in its two-role conversations is
//     the user's; here system and tool turns exist, and are not the
//     user's knowledge).
//
// Invariants: the kinds talk to the judge only through sdk.Host, every
// call at temperature 0 with a JSON schema; judge faults are returned as
// the *abi.Error the host gave, so their code survives; turns are
// rendered as abi.TurnsText renders them (v1/README.md §8.1).
package conversation

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/sdk"
)

// Names and version of the plugin and its kinds.
const (
	PluginName                   = "conversation"
	Version                      = "1.0.0"
	KindKnowledgeRetention       = "knowledge_retention"
	KindRoleAdherence            = "role_adherence"
	KindConversationCompleteness = "conversation_completeness"
	KindTurnRelevancy            = "turn_relevancy"
)

// Judge-call purposes, for the host's accounting.
const (
	PurposeKnowledge      = "knowledge"
	PurposeRetention      = "retention"
	PurposeOutOfCharacter = "out_of_character"
	PurposeIntentions     = "intentions"
	PurposeCompleteness   = "completeness"
	PurposeRelevancy      = "relevancy"
)

// DefaultWindow is turn_relevancy's window in interactions, DeepEval's.
const DefaultWindow = 10

// Verdict values.
const (
	VerdictYes = "yes"
	VerdictNo  = "no"
)

// Plugin returns the conversation plugin, for linking into the host or
// serving from a Wasm module.
func Plugin() *sdk.Plugin {
	return &sdk.Plugin{
		Name:         PluginName,
		Version:      Version,
		Capabilities: []abi.Capability{abi.CapJudge},
		Kinds: []sdk.Kind{
			KnowledgeRetentionKind(), RoleAdherenceKind(), ConversationCompletenessKind(), TurnRelevancyKind(),
		},
	}
}

// Config is the configuration of knowledge_retention, role_adherence and
// conversation_completeness. The threshold is the metric's threshold.
type Config struct {
	StrictMode bool `json:"strict_mode,omitempty" jsonschema_description:"Score 1 only if every verdict passes, else 0; the threshold is forced to 1."`
}

// TurnRelevancyConfig is the configuration of turn_relevancy.
type TurnRelevancyConfig struct {
	StrictMode bool `json:"strict_mode,omitempty" jsonschema_description:"Score 1 only if every window's last assistant turn is relevant, else 0; the threshold is forced to 1."`
	Window     int  `json:"window,omitempty" jsonschema:"minimum=0,default=10" jsonschema_description:"Interactions (a user's turns and the assistant's answers) each verdict sees: the one judged and up to window-1 before it. 0 means the default, 10 (DeepEval's window_size)."`
}

// KnowledgeRetentionKind returns the knowledge_retention metric kind.
func KnowledgeRetentionKind() *sdk.MetricKind[Config] {
	return &sdk.MetricKind[Config]{
		Name:           KindKnowledgeRetention,
		Description:    "Knowledge retention: the share of assistant turns that neither forget nor contradict what the user said before (facts extracted per user turn, then one verdict per assistant turn)",
		RequiredFields: []string{abi.FieldTurns},
		Measure:        measureKnowledgeRetention,
	}
}

// RoleAdherenceKind returns the role_adherence metric kind.
func RoleAdherenceKind() *sdk.MetricKind[Config] {
	return &sdk.MetricKind[Config]{
		Name:           KindRoleAdherence,
		Description:    "Role adherence: the share of assistant turns that stay in the chatbot_role (one call lists the turns out of character)",
		RequiredFields: []string{abi.FieldTurns, abi.FieldChatbotRole},
		Measure:        measureRoleAdherence,
	}
}

// ConversationCompletenessKind returns the conversation_completeness kind.
func ConversationCompletenessKind() *sdk.MetricKind[Config] {
	return &sdk.MetricKind[Config]{
		Name:           KindConversationCompleteness,
		Description:    "Conversation completeness: the share of the user's intentions the conversation met (intentions extracted, then one verdict each)",
		RequiredFields: []string{abi.FieldTurns},
		Measure:        measureCompleteness,
	}
}

// TurnRelevancyKind returns the turn_relevancy metric kind.
func TurnRelevancyKind() *sdk.MetricKind[TurnRelevancyConfig] {
	return &sdk.MetricKind[TurnRelevancyConfig]{
		Name:           KindTurnRelevancy,
		Description:    "Turn relevancy: the share of interactions whose assistant answer is relevant to the conversation so far (one verdict per sliding window of interactions)",
		RequiredFields: []string{abi.FieldTurns},
		Validate: func(c *TurnRelevancyConfig) error {
			if c.Window < 0 {
				e := abi.Errorf(abi.CodeInvalidConfig, "window is %d; want >= 1 (or 0 for the default, %d)", c.Window, DefaultWindow)
				e.Field = "window"
				return e
			}
			return nil
		},
		Measure: measureTurnRelevancy,
	}
}

// Details are MeasureResult.Details of every kind.
type Details struct {
	Kind string `json:"kind"`
	// Knowledge are the facts extracted per user turn (knowledge_retention).
	Knowledge []Knowledge `json:"knowledge,omitempty"`
	// Intentions are the user's intentions (conversation_completeness).
	Intentions []string `json:"intentions,omitempty"`
	// Window is turn_relevancy's window, in interactions.
	Window int `json:"window,omitempty"`
	// Verdicts are the judgements the score counts, in order.
	Verdicts []Verdict `json:"verdicts"`
	Passed   int       `json:"passed"`
	Total    int       `json:"total"`
	// Formula is the score's arithmetic, e.g. "no / verdicts = 2 / 3 = 0.667".
	Formula       string   `json:"formula"`
	StrictMode    bool     `json:"strict_mode,omitempty"`
	PromptVersion string   `json:"prompt_version"`
	Usage         Usage    `json:"usage"`
	Warnings      []string `json:"warnings,omitempty"`
}

// Knowledge is what one user turn told the assistant.
type Knowledge struct {
	// Turn is the user turn's index in the case's turns (0-based).
	Turn  int            `json:"turn"`
	Facts jsontext.Value `json:"facts"`
}

// Verdict is one judgement.
type Verdict struct {
	// Turn is the index (0-based) of the turn judged: the assistant turn
	// (knowledge_retention, role_adherence, turn_relevancy's last
	// assistant turn of the window); -1 for an intention.
	Turn int `json:"turn"`
	// Item is what was judged: the turn's content, or the intention.
	Item    string `json:"item"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	// Pass says whether the verdict counts towards the score.
	Pass bool `json:"pass"`
}

// Usage is the accounting of every judge call a case made.
type Usage struct {
	Calls        int     `json:"calls"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	USD          float64 `json:"usd"`
	CacheHits    int     `json:"cache_hits"`
}

func (u *Usage) add(a abi.Usage) {
	u.Calls++
	u.InputTokens += a.InputTokens
	u.OutputTokens += a.OutputTokens
	u.USD += a.USD
	if a.CacheHit {
		u.CacheHits++
	}
}
