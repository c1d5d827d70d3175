package cli

import (
	"fmt"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// referrersTag is a tag of the OCI referrers tag schema (sha256-<hex>),
// which registries without the referrers API hold signatures under.
var referrersTag = regexp.MustCompile(`^sha256-[0-9a-f]{64}$`)

func newPluginLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ls oci://REGISTRY/REPO",
		Short: "List a repository's plugin tags with their kinds and capabilities",
		Long: `List every tag of the repository with its manifest digest, transport,
ABI version, kinds and the capabilities it asks for — read from the
manifests' annotations, without downloading any module. A tag that is not
a plugin artifact is listed with why.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseRefArg(args[0], false)
			if err != nil {
				return err
			}
			client, err := newRegistryClient(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			tags, err := client.Tags(cmd.Context(), ref)
			if err != nil {
				return registryErr(err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TAG\tDIGEST\tTRANSPORT\tABI\tKINDS\tCAPABILITIES")
			for _, t := range tags {
				if referrersTag.MatchString(t) {
					continue // the referrers tag schema's index, not a plugin
				}
				r := ref
				r.Tag, r.Digest = t, ""
				f, err := client.FetchPlugin(cmd.Context(), r)
				if err != nil {
					fmt.Fprintf(tw, "%s\t-\t-\t-\tnot a plugin: %v\t-\n", t, err)
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t, f.Manifest.Digest, f.Transport, f.Summary.ABI,
					strings.Join(f.Summary.Kinds, ","), capsText(f.Summary.Capabilities))
			}
			return tw.Flush()
		},
	}
}
