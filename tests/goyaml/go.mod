// The Go YAML readers of the kpt / kustomize / kubectl chain, for the differential type test.
module krmfn.dev/tests/goyaml

go 1.26.0

require (
	gopkg.in/yaml.v2 v2.4.0
	gopkg.in/yaml.v3 v3.0.1
	sigs.k8s.io/yaml v1.6.0
)

require go.yaml.in/yaml/v2 v2.4.2 // indirect
