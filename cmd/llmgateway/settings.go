package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// settings is the binary's own configuration: everything that is not part
// of the gateway's config file.
type settings struct {
	configPath      string
	listen          string
	name            string
	logLevel        level
	shutdownTimeout time.Duration
	drainDelay      time.Duration
	healthPath      string
	readyPath       string
}

// option describes one command-line flag and its LLMGW_* environment twin.
type option struct {
	flag  string
	env   string
	def   string
	usage string
}

// options is the spec's flag table, in the order -help prints it.
var options = []option{
	{"config", "LLMGW_CONFIG", "/etc/llmgateway/config.yaml", "config file (YAML, or JSON when it ends in .json)"},
	{"listen", "LLMGW_LISTEN", ":8080", "listen address"},
	{"name", "LLMGW_NAME", "gateway", "instance name, the llmgw[name] log prefix"},
	{"log-level", "LLMGW_LOG_LEVEL", "info", "level of the binary's own lifecycle lines: debug, info, warn or error"},
	{"shutdown-timeout", "LLMGW_SHUTDOWN_TIMEOUT", "30s", "how long shutdown waits for in-flight requests"},
	{"drain-delay", "LLMGW_DRAIN_DELAY", "5s", "how long readiness fails before the listener closes"},
	{"health-path", "LLMGW_HEALTH_PATH", "/healthz", "liveness probe path (always 200)"},
	{"ready-path", "LLMGW_READY_PATH", "/readyz", "readiness probe path (503 once shutdown begins)"},
}

// usageError is an error in the command line or the LLMGW_* environment,
// as opposed to one in the config file or at run time. main exits 2 on it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...interface{}) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// parseSettings reads the flags in args and their LLMGW_* twins through
// getenv. An explicitly passed flag beats the environment, and a non-empty
// environment variable beats the default. Every invalid value is an error
// naming the flag (and the variable when the value came from it).
func parseSettings(args []string, getenv func(string) string, output io.Writer) (*settings, error) {
	fs := flag.NewFlagSet("llmgateway", flag.ContinueOnError)
	// The flag package would print each error followed by the whole usage;
	// run reports the error once instead, and -help prints the usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	values := make(map[string]*string, len(options))
	for _, o := range options {
		values[o.flag] = fs.String(o.flag, o.def, o.usage+" (env "+o.env+")")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = fmt.Fprintf(output, "Usage: llmgateway [flags]\n\nEvery flag has an LLMGW_* environment twin; an explicitly passed flag beats it.\n\n")
			fs.SetOutput(output)
			fs.PrintDefaults()
			return nil, err
		}
		return nil, usagef("%v (see -help)", err)
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q (every setting is a -flag)", fs.Arg(0))
	}

	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	source := map[string]string{}
	for _, o := range options {
		source[o.flag] = "-" + o.flag
		if explicit[o.flag] {
			continue
		}
		if v := getenv(o.env); v != "" {
			*values[o.flag] = v
			source[o.flag] = o.env + " (-" + o.flag + ")"
		}
	}

	s := &settings{
		configPath: *values["config"],
		listen:     *values["listen"],
		name:       *values["name"],
		healthPath: *values["health-path"],
		readyPath:  *values["ready-path"],
	}
	var err error
	if s.logLevel, err = parseLevel(*values["log-level"]); err != nil {
		return nil, invalid(source["log-level"], *values["log-level"], err)
	}
	if s.shutdownTimeout, err = parseNonNegativeDuration(*values["shutdown-timeout"]); err != nil {
		return nil, invalid(source["shutdown-timeout"], *values["shutdown-timeout"], err)
	}
	if s.drainDelay, err = parseNonNegativeDuration(*values["drain-delay"]); err != nil {
		return nil, invalid(source["drain-delay"], *values["drain-delay"], err)
	}
	for _, p := range []string{"health-path", "ready-path"} {
		if v := *values[p]; !strings.HasPrefix(v, "/") {
			return nil, invalid(source[p], v, errors.New(`must start with "/"`))
		}
	}
	if s.healthPath == s.readyPath {
		return nil, usagef("-health-path and -ready-path must differ (both are %q)", s.healthPath)
	}
	for _, p := range []string{"config", "listen", "name"} {
		if strings.TrimSpace(*values[p]) == "" {
			return nil, invalid(source[p], *values[p], errors.New("must not be empty"))
		}
	}
	return s, nil
}

func invalid(source, value string, err error) error {
	return usagef("invalid value %q for %s: %v", value, source, err)
}

func parseNonNegativeDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return 0, errors.New(`not a duration (use a Go duration such as "5s" or "1m30s")`)
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return d, nil
}
