// yaml-types reads a YAML stream on stdin the way Go tools in the kpt/kustomize/kubectl chain read it
// and prints, per reader, every scalar of every document with the Go type that reader gave it:
//
//	{"yaml.v2": [{"data.k0": ["string", "y"], ...}, ...], "yaml.v3": [...], "sigs.k8s.io/yaml": [...]}
//
// yaml.v2 is how kubectl reads manifests (through sigs.k8s.io/yaml), yaml.v3 how kustomize and kpt
// (kyaml) read them. Keys are rendered with fmt, so a key a reader takes for a boolean shows as "true".
// The tests compare these types with the ones the writer meant (tests/test_yaml_types.py).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	yamlv2 "gopkg.in/yaml.v2"
	yamlv3 "gopkg.in/yaml.v3"
	sigsyaml "sigs.k8s.io/yaml"
)

type leaves map[string][2]string

func walk(path string, value interface{}, out leaves) {
	join := func(key interface{}) string {
		if path == "" {
			return fmt.Sprint(key)
		}
		return path + "." + fmt.Sprint(key)
	}
	switch v := value.(type) {
	case map[interface{}]interface{}:
		for key, child := range v {
			walk(join(key), child, out)
		}
	case map[string]interface{}:
		for key, child := range v {
			walk(join(key), child, out)
		}
	case []interface{}:
		for i, child := range v {
			walk(fmt.Sprintf("%s[%d]", path, i), child, out)
		}
	case nil:
		out[path] = [2]string{"null", ""}
	case string:
		out[path] = [2]string{"string", v}
	case bool:
		out[path] = [2]string{"bool", strconv.FormatBool(v)}
	case int:
		out[path] = [2]string{"int", strconv.Itoa(v)}
	case int64:
		out[path] = [2]string{"int", strconv.FormatInt(v, 10)}
	case uint64:
		out[path] = [2]string{"int", strconv.FormatUint(v, 10)}
	case float64:
		out[path] = [2]string{"float", strconv.FormatFloat(v, 'g', -1, 64)}
	case time.Time:
		out[path] = [2]string{"timestamp", v.Format(time.RFC3339Nano)}
	default:
		out[path] = [2]string{fmt.Sprintf("other:%T", v), fmt.Sprint(v)}
	}
}

func decodeAll(input []byte, decode func(*interface{}) error) ([]leaves, error) {
	var docs []leaves
	for {
		var doc interface{}
		err := decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		out := leaves{}
		walk("", doc, out)
		docs = append(docs, out)
	}
}

// documents splits a stream the way kubectl's YAML reader does: at lines that are "---".
func documents(input []byte) [][]byte {
	var docs [][]byte
	var current []string
	for _, line := range strings.Split(string(input), "\n") {
		if strings.TrimRight(line, " \t\r") == "---" {
			docs = append(docs, []byte(strings.Join(current, "\n")))
			current = nil
			continue
		}
		current = append(current, line)
	}
	docs = append(docs, []byte(strings.Join(current, "\n")))
	return docs
}

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	report := map[string]interface{}{}
	failures := map[string]string{}

	v2 := yamlv2.NewDecoder(bytes.NewReader(input))
	if docs, err := decodeAll(input, func(out *interface{}) error { return v2.Decode(out) }); err != nil {
		failures["yaml.v2"] = err.Error()
	} else {
		report["yaml.v2"] = docs
	}
	v3 := yamlv3.NewDecoder(bytes.NewReader(input))
	if docs, err := decodeAll(input, func(out *interface{}) error { return v3.Decode(out) }); err != nil {
		failures["yaml.v3"] = err.Error()
	} else {
		report["yaml.v3"] = docs
	}
	var sigs []leaves
	for _, doc := range documents(input) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var value interface{}
		if err := sigsyaml.Unmarshal(doc, &value); err != nil {
			failures["sigs.k8s.io/yaml"] = err.Error()
			break
		}
		out := leaves{}
		walk("", value, out)
		sigs = append(sigs, out)
	}
	if _, failed := failures["sigs.k8s.io/yaml"]; !failed {
		report["sigs.k8s.io/yaml"] = sigs
	}
	if len(failures) > 0 {
		report["errors"] = failures
	}
	encoded, err := json.Marshal(report)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Stdout.Write(encoded)
}
