package judge

import "github.com/agentanvil/anvil/host/internal/judgeconfig"

// The configuration of a judge lives in host/internal/judgeconfig, which
// links nothing but the standard library, so that parsing a config does not
// link this package's HTTP and OpenAI client. These aliases keep the names
// the rest of the host uses; they are the same types, not copies.

// Defaults applied by Config.WithDefaults.
const (
	DefaultTimeout        = judgeconfig.DefaultTimeout
	DefaultMaxConcurrency = judgeconfig.DefaultMaxConcurrency
	DefaultMaxRetries     = judgeconfig.DefaultMaxRetries
	DefaultMaxTopLogprobs = judgeconfig.DefaultMaxTopLogprobs
)

// Config is one configured judge (judgeconfig.Config).
type Config = judgeconfig.Config

// Price is USD per million tokens (judgeconfig.Price).
type Price = judgeconfig.Price

// Duration is the config duration type: "30s" or a number of seconds.
type Duration = judgeconfig.Duration
