package main

import "github.com/spf13/cobra"

// newPluginCmd is replaced by the plugin inspect|verify implementation.
func newPluginCmd() *cobra.Command {
	return &cobra.Command{Use: "plugin", Short: "Inspect and verify plugins"}
}
