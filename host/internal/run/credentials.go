package run

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// keyring holds the API keys a pipeline's providers name (api_key_env →
// secret), read from the environment once, when the pipeline is prepared.
type keyring map[string]string

// credentials reads every api_key_env the pipeline's providers name and
// registers each key with the redactor (store.RegisterSecret), also when
// optional, so that a key quoted anywhere is never stored or logged and a
// replay hashes requests as the recording run did. An unset variable is
// an error naming the provider block and the variable, unless optional
// (replay, gate, evolve: the provider is never called).
func credentials(p *pipeline.Pipeline, optional bool) (keyring, error) {
	k := keyring{}
	var errs []error
	for _, name := range sortedNames(p.Providers) {
		env := p.Providers[name].APIKeyEnv
		if env == "" {
			continue
		}
		if v := os.Getenv(env); v != "" {
			store.RegisterSecret(v)
			k[env] = v
			continue
		}
		if !optional {
			errs = append(errs, sdk.Errorf(sdk.CodeInvalid, "%s: providers.%s.api_key_env: environment variable %s is not set",
				filepath.Base(p.File), name, env))
		}
	}
	return k, errors.Join(errs...)
}

// bound returns the credentials of the blocks that use plugin: what is
// bound to the plugin when it is opened (plugin.Grant.Credentials).
func (k keyring) bound(p *pipeline.Pipeline, plugin string) map[string]string {
	var out map[string]string
	for _, spec := range p.Providers {
		if v, ok := k[spec.APIKeyEnv]; ok && spec.Use == plugin {
			if out == nil {
				out = map[string]string{}
			}
			out[spec.APIKeyEnv] = v
		}
	}
	return out
}

// boundProvider is one [providers.NAME] block bound to its plugin when
// the pipeline is prepared: every call carries the block's configuration,
// which names the API key instead of holding it when the plugin takes
// credentials by reference (sdk.Info.Credentials). The key itself was
// bound to the plugin when it was opened (plugin.Grant.Credentials).
type boundProvider struct {
	sdk.Provider
	config map[string]any
}

var _ sdk.Provider = (*boundProvider)(nil)

// Chat implements sdk.Provider.
func (b *boundProvider) Chat(ctx context.Context, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	req := *r
	req.Config = b.config
	return b.Provider.Chat(ctx, &req)
}

// unboundProvider is a block whose api_key_env variable was unset when a
// replay prepared the pipeline: a call that reaches it fails naming the
// variable, and the plugin never sees it.
type unboundProvider struct {
	sdk.Provider
	name, env string
}

var _ sdk.Provider = (*unboundProvider)(nil)

// Chat implements sdk.Provider.
func (u *unboundProvider) Chat(context.Context, *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	return nil, sdk.Errorf(sdk.CodeAuth, "providers.%s.api_key_env: environment variable %s is not set", u.name, u.env)
}

// bindProvider binds the block called name (configuration cfg, API key
// variable env holding key) to the plugin prov.
//
// # Notes
//
//   - A plugin that declares sdk.Info.Credentials receives the key's name
//     (sdk.ConfigAPIKeyCredential) and asks the host's http function (wasm)
//     or its environment (process, builtin) for the secret when it sends a
//     request; the key never crosses the wire.
//   - Any other plugin — an api 1 plugin built before credentials — gets
//     the key in sdk.ConfigAPIKey with every call, as api 1 always did.
func bindProvider(name string, prov sdk.Provider, cfg map[string]any, env, key string) sdk.Provider {
	switch {
	case env == "":
		return prov
	case key == "":
		return &unboundProvider{Provider: prov, name: name, env: env}
	}
	bound := make(map[string]any, len(cfg)+1)
	for k, v := range cfg {
		bound[k] = v
	}
	if prov.Describe().Credentials {
		bound[sdk.ConfigAPIKeyCredential] = env
	} else {
		bound[sdk.ConfigAPIKey] = key
	}
	return &boundProvider{Provider: prov, config: bound}
}

// CheckCredentials reports every provider block whose api_key_env names
// an unset environment variable, as Prepare would without
// WithoutCredentials.
func CheckCredentials(p *pipeline.Pipeline) error {
	_, err := credentials(p, false)
	return err
}
