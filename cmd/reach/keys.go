package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/names"
	"github.com/spf13/cobra"
)

// newKeys is `reach keys create|list|revoke`: API keys, stored hashed in
// the data folder's keys.json.
func newKeys() *cobra.Command {
	var data string
	cmd := dataGroup(&data, &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke API keys",
		Long: `API keys authenticate agents and people to the gateway (Authorization:
Bearer rk_... or X-Reach-Key: rk_...). Only their SHA-256 is stored, in
DATA/keys.json (mode 0600); a key is shown once, when it is created. A running
gateway sees new and revoked keys within a second.`,
	})
	// --config, for every keys command: the key file of that
	// configuration's data folder, unless --data names one.
	var configPath string
	cmd.PersistentFlags().StringVar(&configPath, "config", "", "the gateway's configuration: the keys of its data folder (unless --data names one); create checks that it asks for keys")
	cmd.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if configPath == "" || cmd.Flag("data").Changed {
			return dataIsFolder(data)
		}
		cfg, err := config.LoadState(configPath)
		if err != nil {
			return err
		}
		data = cfg.DataDir()
		return dataIsFolder(data)
	}
	open := func() (*auth.Keys, error) { return auth.OpenKeys(auth.KeysPath(data)) }

	var spec auth.KeySpec
	create := &cobra.Command{
		Use:   "create --principal NAME [--roles a,b] [--tenant T] [--attr department=sales] [--config FILE]",
		Short: "Create a key and print it once",
		Long: `Creates a key for a principal and prints it on stdout, alone, once: store it
now. Roles, tenant and attributes are what policies see of the principal.

A gateway checks keys only when its configuration has "auth: {keys: true}";
without it, it asks no client for credentials. With --config, the key goes
to that configuration's data folder and the configuration is checked for it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := data // the configuration's, with --config
			var cfg *config.Config
			if configPath != "" {
				var err error
				if cfg, err = config.LoadState(configPath); err != nil {
					return err
				}
			}
			// The default folder lies in the working directory, which may
			// be read-only (a container's): say so before anything else.
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return fmt.Errorf("creating the data folder: %w: name the gateway's data folder with --data DIR (or its configuration with --config FILE)", err)
			}
			keys, err := auth.OpenKeys(auth.KeysPath(dir))
			if err != nil {
				return err
			}
			secret, key, err := keys.Create(spec)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), secret)
			errOut := cmd.ErrOrStderr()
			fmt.Fprintf(errOut, "created %s for %s in %s; the key above is shown once: store it now.\n",
				key.ID, key.Principal, auth.KeysPath(dir))
			if w := misspeltRoles(spec.Roles, key.ID); w != "" {
				fmt.Fprint(errOut, w)
			}
			switch {
			case cfg == nil:
				fmt.Fprintf(errOut, "note: a gateway checks keys only when its configuration has auth: {keys: true}; without it, it asks no client for credentials. Check yours with --config FILE.\n")
			case cfg.Auth == nil || !cfg.Auth.Keys:
				fmt.Fprintf(errOut, "warning: %s has no auth: {keys: true}: a gateway serving it asks no client for a key, and this one is never checked. Add to it:\n%s", configPath, keysAuthYAML)
			}
			return nil
		},
	}
	create.Flags().StringVar(&spec.Principal, "principal", "", "who the key acts for (required)")
	create.Flags().StringSliceVar(&spec.Roles, "roles", nil, "the principal's roles, comma-separated")
	create.Flags().StringVar(&spec.Tenant, "tenant", "", "the principal's tenant")
	create.Flags().StringToStringVar(&spec.Attributes, "attr", nil, "an attribute for policies, NAME=VALUE (repeatable)")
	create.MarkFlagRequired("principal")

	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the keys (never the keys themselves)",
		Long: `Lists the keys: id, principal, roles, tenant, when created, whether revoked,
and the attributes for policies (NAME=VALUE, by name). Never the keys
themselves. --json prints the same, one object a key.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keys, err := open()
			if err != nil {
				return err
			}
			ks, err := keys.List()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if ks == nil {
					ks = []auth.Key{}
				}
				return writeJSON(out, ks)
			}
			tw := table(out, len(ks), fmt.Sprintf("no keys in %s; create one with `reach keys create --principal NAME`", auth.KeysPath(data)),
				"ID\tPRINCIPAL\tROLES\tTENANT\tCREATED\tSTATUS\tATTRIBUTES")
			if tw == nil {
				return nil
			}
			for _, k := range ks {
				status := "active"
				if k.Revoked != nil {
					status = "revoked " + k.Revoked.Format("2006-01-02")
				}
				attrs := make([]string, 0, len(k.Attributes))
				for _, name := range slices.Sorted(maps.Keys(k.Attributes)) {
					attrs = append(attrs, name+"="+k.Attributes[name])
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Principal, dash(strings.Join(k.Roles, ",")), dash(k.Tenant),
					k.Created.Format("2006-01-02 15:04"), status, dash(strings.Join(attrs, ",")))
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a key; a running gateway refuses it within a second",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			keys, err := open()
			if err != nil {
				return err
			}
			if err := keys.Revoke(args[0]); err != nil {
				if !errors.Is(err, auth.ErrNoKey) {
					return err
				}
				// Say where it looked and what an id is: a user who gave
				// the key itself (rk_...) read "no such key". A key
				// anywhere in it (pasted with its header, "Bearer rk_...",
				// or a space) is not echoed either.
				if strings.Contains(args[0], "rk_") {
					return errors.New("revoking rk_…: that is a key itself, not its id: revoke it by the id reach keys list shows for its principal (key_...); the key was typed on a command line, so make its principal a new one")
				}
				return fmt.Errorf("revoking %s: %s holds no key of that id: reach keys list shows the ids of its keys (key_...); a gateway of another data folder: --data or --config", printable(args[0]), printable(auth.KeysPath(data)))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// keysAuthYAML is what a configuration needs for its gateway to ask for
// keys.
const keysAuthYAML = "  auth:\n    keys: true\n"

// unusedKeys says, for the banner, when the data folder holds keys that
// the configuration does not ask for (no auth:, or auth without keys), or
// "" when there are none or they are checked.
//
// It also says when the configuration asks for keys, accepts no JWT, and
// the data folder holds none yet: nobody can call the gateway, and the
// command that makes the first key must be given this data folder.
func unusedKeys(cfg *config.Config, dataDir string) string {
	if cfg.Auth != nil && cfg.Auth.Keys {
		if cfg.Auth.JWT != nil {
			return ""
		}
		if keys, err := auth.OpenKeys(auth.KeysPath(dataDir)); err == nil && keys.Len() == 0 {
			return fmt.Sprintf("warning: no API key exists yet in %s: every client is refused until one does. Create the first:\n  reach keys create --principal NAME --roles operator --data %s\n",
				auth.KeysPath(dataDir), dataDir)
		}
		return ""
	}
	keys, err := auth.OpenKeys(auth.KeysPath(dataDir))
	if err != nil || keys.Len() == 0 {
		return ""
	}
	if cfg.Authenticates() {
		return fmt.Sprintf("warning: %s holds %d API keys, but auth has no keys: true: they are not accepted. Add keys: true under auth:.\n", auth.KeysPath(dataDir), keys.Len())
	}
	return fmt.Sprintf("warning: %s holds %d API keys, but the configuration has no auth: this gateway asks no client for credentials and checks no key. To require them, add to the configuration:\n%s",
		auth.KeysPath(dataDir), keys.Len(), keysAuthYAML)
}

// knownRoles are the roles reach itself gives a meaning to: an operator
// sees every request, the stats and the metrics; a reviewer gives an
// approval's second vote.
var knownRoles = []string{"operator", "reviewer"}

// misspeltRoles warns of roles one typo or two from a role reach knows and
// not it (operater), saying how to make the key again, or "". A role of the
// policies' own, far from those, is theirs.
func misspeltRoles(roles []string, id string) string {
	fixed, wrong := slices.Clone(roles), ""
	for i, r := range roles {
		for _, k := range knownRoles {
			if r != k && names.Distance(strings.ToLower(r), k) <= 2 {
				fixed[i] = k
				wrong += fmt.Sprintf("warning: role %q is not %q, the role reach knows: this key has no %s's rights (policies may still name %s). ", printable(r), k, k, printable(r))
			}
		}
	}
	if wrong == "" {
		return ""
	}
	return wrong + fmt.Sprintf("If it was a typo, revoke the key and make it again: reach keys revoke %s, then reach keys create with --roles %s\n", id, printable(strings.Join(fixed, ",")))
}
