package controlplane

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// Dockerfile is a Dockerfile of the checkout as BuildKit's own parser reads it: its global
// build arguments, its stages and the builder features it uses. occ parses every Dockerfile it
// builds before anything is created, to know which base images the build would fetch and
// whether the engine's builder can read the file at all.
type Dockerfile struct {
	// Path is the Dockerfile's slash-separated path inside the build context.
	Path string
	// Syntax is the frontend image a `# syntax=` directive names, "" without one; SyntaxLine
	// is its line.
	Syntax     string
	SyntaxLine int
	// Args are the global build arguments (the ARG lines before the first FROM), in order.
	Args []DockerfileArg
	// Stages are the build stages in order.
	Stages []DockerfileStage
	// Features are the uses of builder features that not every engine's builder supports.
	Features []FeatureUse

	escape rune
}

// DockerfileArg is one global build argument.
type DockerfileArg struct {
	Name string
	// Default is the value the ARG line gives, unexpanded; HasDefault says it gives one.
	Default    string
	HasDefault bool
	Line       int
}

// DockerfileStage is one FROM and what the stage takes from other stages or images.
type DockerfileStage struct {
	// Name is the stage's name (lower-case, as BuildKit matches it), "" when unnamed.
	Name string
	// Base is the FROM operand as written ("${NODE_BASE_IMAGE}", "dependencies", "scratch").
	Base string
	Line int
	// Sources are the --from operands of COPY and the from= of RUN --mount, as written, each
	// with its line: another stage (by name or index) or an image.
	Sources []StageSource
}

// StageSource is one reference from a stage to a stage or image other than its base.
type StageSource struct {
	// From is the operand as written.
	From string
	// Instruction is "COPY --from" or "RUN --mount from".
	Instruction string
	Line        int
}

// Feature is a Dockerfile construct that only newer builders read.
type Feature string

// The features occ checks the engine's builder for.
const (
	// FeatureHeredoc is a here-document (`RUN cmd <<'EOF'`, `COPY <<EOF dest`).
	FeatureHeredoc Feature = "here-document"
	// FeatureRunMount is RUN --mount (secret, bind, cache, tmpfs or ssh mounts).
	FeatureRunMount Feature = "RUN --mount"
	// FeatureRunNetwork is RUN --network.
	FeatureRunNetwork Feature = "RUN --network"
	// FeatureCopyLink is COPY --link or ADD --link.
	FeatureCopyLink Feature = "--link"
)

// FeatureUse is one use of a feature.
type FeatureUse struct {
	Feature Feature
	// Line is where the instruction starts; Text is its first line, as written.
	Line int
	Text string
}

// ParseDockerfile reads and parses the Dockerfile at rel (slash-separated) inside contextDir.
// A file BuildKit's parser refuses is an error naming the file and line.
func ParseDockerfile(contextDir, rel string) (*Dockerfile, error) {
	data, err := os.ReadFile(filepath.Join(contextDir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("read %s of the checkout %s: %w", rel, contextDir, err)
	}
	return parseDockerfile(rel, data)
}

func parseDockerfile(rel string, data []byte) (*Dockerfile, error) {
	df := &Dockerfile{Path: rel}
	if syntax, _, loc, ok := parser.DetectSyntax(data); ok {
		df.Syntax = syntax
		if len(loc) > 0 {
			df.SyntaxLine = loc[0].Start.Line
		}
	}
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", rel, err)
	}
	df.escape = res.EscapeToken
	lines := strings.Split(string(data), "\n")
	for _, n := range res.AST.Children {
		df.Features = append(df.Features, featuresOf(n, lines)...)
	}
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", rel, err)
	}
	for _, a := range metaArgs {
		line := firstLine(a.Location())
		for _, kv := range a.Args {
			arg := DockerfileArg{Name: kv.Key, Line: line}
			if kv.Value != nil {
				arg.Default, arg.HasDefault = *kv.Value, true
			}
			df.Args = append(df.Args, arg)
		}
	}
	for _, s := range stages {
		st := DockerfileStage{Name: strings.ToLower(s.Name), Base: s.BaseName, Line: firstLine(s.Location)}
		for _, c := range s.Commands {
			switch c := c.(type) {
			case *instructions.CopyCommand:
				if c.From != "" {
					st.Sources = append(st.Sources, StageSource{From: c.From, Instruction: "COPY --from", Line: firstLine(c.Location())})
				}
			case *instructions.RunCommand:
				for _, m := range instructions.GetMounts(c) {
					if m.From != "" {
						st.Sources = append(st.Sources, StageSource{From: m.From, Instruction: "RUN --mount from", Line: firstLine(c.Location())})
					}
				}
			}
		}
		df.Stages = append(df.Stages, st)
	}
	if len(df.Stages) == 0 {
		return nil, fmt.Errorf("parse %s: it has no FROM instruction", rel)
	}
	return df, nil
}

// featuresOf lists the features one instruction uses, from its parsed node: here-documents
// the parser attached to it, and the flags that only newer builders know.
func featuresOf(n *parser.Node, lines []string) []FeatureUse {
	text := ""
	if n.StartLine >= 1 && n.StartLine <= len(lines) {
		text = strings.TrimSpace(lines[n.StartLine-1])
	}
	use := func(f Feature) FeatureUse { return FeatureUse{Feature: f, Line: n.StartLine, Text: text} }
	var out []FeatureUse
	if len(n.Heredocs) > 0 {
		out = append(out, use(FeatureHeredoc))
	}
	instruction := strings.ToLower(n.Value)
	seen := map[Feature]bool{}
	for _, flag := range n.Flags {
		name, _, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
		var f Feature
		switch {
		case instruction == "run" && name == "mount":
			f = FeatureRunMount
		case instruction == "run" && name == "network":
			f = FeatureRunNetwork
		case (instruction == "copy" || instruction == "add") && name == "link":
			f = FeatureCopyLink
		default:
			continue
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, use(f))
		}
	}
	return out
}

// Uses lists the uses of f, in line order.
func (d *Dockerfile) Uses(f Feature) []FeatureUse {
	var out []FeatureUse
	for _, u := range d.Features {
		if u.Feature == f {
			out = append(out, u)
		}
	}
	return out
}

// Arg returns the global build argument name.
func (d *Dockerfile) Arg(name string) (DockerfileArg, bool) {
	for _, a := range d.Args {
		if a.Name == name {
			return a, true
		}
	}
	return DockerfileArg{}, false
}

// BaseUse is one place a build fetches an image: the FROM of a stage, or the --from of a COPY
// or RUN --mount that names an image instead of a stage.
type BaseUse struct {
	// Dockerfile and Line locate it; Stage is the stage's name (or its index when unnamed).
	Dockerfile string `json:"dockerfile"`
	Line       int    `json:"line"`
	Stage      string `json:"stage"`
	// Written is the operand as written ("${NODE_RUNTIME_BASE_IMAGE}").
	Written string `json:"written"`
	// Arg is the build argument the operand consists of, "" when it names the image itself.
	Arg string `json:"arg,omitempty"`
	// Image is the operand expanded: the image the build fetches.
	Image string `json:"image"`
}

// String locates the use: "Dockerfile:47 (stage runtime, FROM ${NODE_RUNTIME_BASE_IMAGE})".
func (u BaseUse) String() string {
	return fmt.Sprintf("%s:%d (stage %s, %s)", u.Dockerfile, u.Line, u.Stage, u.Written)
}

// BaseError is a base that cannot be fetched as written: empty, or not an image reference.
type BaseError struct {
	Use  BaseUse
	Rule string
	Fix  string
}

func (e *BaseError) Error() string {
	return fmt.Sprintf("%s: %s; %s", e.Use, e.Rule, e.Fix)
}

// Bases returns every image the build of target (the last stage when empty) with args fetches,
// following the stages it depends on (FROM another stage, COPY --from, RUN --mount from=) as
// BuildKit does, which builds only the stages the target needs. Stage references and `FROM
// scratch` fetch nothing and are left out. The global ARG lines are expanded as BuildKit
// expands them for FROM: a build argument replaces a declared ARG's default; one the file does
// not declare has no effect.
func (d *Dockerfile) Bases(target string, args map[string]string) ([]BaseUse, error) {
	index, err := d.targetIndex(target)
	if err != nil {
		return nil, err
	}
	env, err := d.globalEnv(args)
	if err != nil {
		return nil, err
	}
	lex := shell.NewLex(d.escape)
	expand := func(word string, line int) (string, error) {
		res, err := lex.ProcessWordWithMatches(word, env)
		if err != nil {
			return "", fmt.Errorf("%s:%d: expand %q: %w", d.Path, line, word, err)
		}
		return res.Result, nil
	}
	var out []BaseUse
	visited := map[int]bool{}
	var visit func(i int) error
	visit = func(i int) error {
		if visited[i] {
			return nil
		}
		visited[i] = true
		st := d.Stages[i]
		name := st.Name
		if name == "" {
			name = strconv.Itoa(i)
		}
		refs := append([]StageSource{{From: st.Base, Instruction: "FROM", Line: st.Line}}, st.Sources...)
		for _, ref := range refs {
			operand := ref.From
			if ref.Instruction == "FROM" {
				var err error
				if operand, err = expand(ref.From, ref.Line); err != nil {
					return err
				}
			}
			if j, ok := d.stageRef(operand, i); ok {
				if err := visit(j); err != nil {
					return err
				}
				continue
			}
			if strings.EqualFold(operand, "scratch") && ref.Instruction == "FROM" {
				continue
			}
			written := "FROM " + ref.From
			if ref.Instruction != "FROM" {
				written = ref.Instruction + "=" + ref.From
			}
			use := BaseUse{Dockerfile: d.Path, Line: ref.Line, Stage: name, Written: written, Arg: soleArg(ref.From), Image: operand}
			if strings.TrimSpace(operand) == "" {
				return &BaseError{Use: use, Rule: "expands to an empty image reference",
					Fix: fmt.Sprintf("give the build argument %s a value (it has no default in %s)", use.Arg, d.Path)}
			}
			out = append(out, use)
		}
		return nil
	}
	if err := visit(index); err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b BaseUse) int { return a.Line - b.Line })
	return out, nil
}

// targetIndex is the stage a build of target ends with.
func (d *Dockerfile) targetIndex(target string) (int, error) {
	if target == "" {
		return len(d.Stages) - 1, nil
	}
	for i, s := range d.Stages {
		if s.Name == strings.ToLower(target) {
			return i, nil
		}
	}
	var names []string
	for _, s := range d.Stages {
		if s.Name != "" {
			names = append(names, s.Name)
		}
	}
	return 0, fmt.Errorf("%s has no stage %q to build (its stages: %s)", d.Path, target, strings.Join(names, ", "))
}

// stageRef resolves operand as a reference to an earlier stage, by name or index, as BuildKit
// does; a stage can only use the stages before it.
func (d *Dockerfile) stageRef(operand string, current int) (int, bool) {
	lower := strings.ToLower(operand)
	for j := 0; j < current; j++ {
		if d.Stages[j].Name != "" && d.Stages[j].Name == lower {
			return j, true
		}
	}
	if n, err := strconv.Atoi(operand); err == nil && n >= 0 && n < current {
		return n, true
	}
	return 0, false
}

// globalEnv is what FROM lines expand against: each declared global ARG, given its build
// argument when there is one, else its default expanded against the ARGs before it.
func (d *Dockerfile) globalEnv(args map[string]string) (shell.EnvGetter, error) {
	lex := shell.NewLex(d.escape)
	var kv []string
	for _, a := range d.Args {
		if v, ok := args[a.Name]; ok {
			kv = append(kv, a.Name+"="+v)
			continue
		}
		if !a.HasDefault {
			continue
		}
		res, err := lex.ProcessWordWithMatches(a.Default, shell.EnvsFromSlice(kv))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: expand the default of ARG %s: %w", d.Path, a.Line, a.Name, err)
		}
		kv = append(kv, a.Name+"="+res.Result)
	}
	return shell.EnvsFromSlice(kv), nil
}

// soleArg returns NAME when word is exactly $NAME or ${NAME}.
func soleArg(word string) string {
	w := strings.TrimSpace(word)
	var name string
	switch {
	case strings.HasPrefix(w, "${") && strings.HasSuffix(w, "}"):
		name = w[2 : len(w)-1]
	case strings.HasPrefix(w, "$"):
		name = w[1:]
	default:
		return ""
	}
	if name == "" {
		return ""
	}
	for i, c := range name {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return ""
		}
	}
	return name
}

func firstLine(r []parser.Range) int {
	if len(r) == 0 {
		return 0
	}
	return r[0].Start.Line
}
