package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// configEnv names the config file when -c is not given.
const configEnv = "ANVIL_CONFIG"

// defaultConfig is the config file looked for in the working directory.
const defaultConfig = "anvil.yaml"

// configFlagHelp is the -c flag's help on every command that reads a config.
const configFlagHelp = "config file (default: $" + configEnv + ", else ./" + defaultConfig + ")"

// configRuleHelp is the discovery rule, for long help texts.
const configRuleHelp = `The config is -c as given; else $` + configEnv + `; else ./` + defaultConfig + `.`

// errNoConfig is findConfig's error when no rule names a config: no -c,
// no $ANVIL_CONFIG and no ./anvil.yaml. The cache commands, which need a
// config only for the store's location, fall back to the default store.
var errNoConfig = errors.New("no config file: none given with -c, $" + configEnv +
	" is not set, and there is no ./" + defaultConfig + " (`anvil-host init` writes one)")

// findConfig is the one config-discovery rule of every command that reads
// a config (run, estimate, validate, dag render, cache): flag (-c) when
// given; else $ANVIL_CONFIG; else ./anvil.yaml when it exists. A path
// named by -c is returned as given (loading it says what is wrong with
// it); one named by $ANVIL_CONFIG must exist, since the user may not know
// the variable is set. With none of the three it returns errNoConfig.
func findConfig(flag string, getenv func(string) string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if env := getenv(configEnv); env != "" {
		if _, err := os.Stat(env); err != nil {
			return "", fmt.Errorf("$%s=%s: %w (unset it, or pass -c)", configEnv, env, errors.Unwrap(err))
		}
		return env, nil
	}
	if _, err := os.Stat(defaultConfig); err == nil {
		return defaultConfig, nil
	}
	return "", errNoConfig
}

// registerConfigFlag adds -c/--config to cmd, with YAML file completion.
func registerConfigFlag(cmd *cobra.Command, persistent bool, p *string) {
	if persistent {
		cmd.PersistentFlags().StringVarP(p, "config", "c", "", configFlagHelp)
		_ = cmd.MarkPersistentFlagFilename("config", "yaml", "yml")
		return
	}
	cmd.Flags().StringVarP(p, "config", "c", "", configFlagHelp)
	_ = cmd.MarkFlagFilename("config", "yaml", "yml")
}
