// A minimal set-image written with the Go KRM SDK: the speed and fidelity anchor that
// bench/functions.py compares krmfn-set-image with. It reads the same SetImage functionConfig
// (images: [{name, newName, newTag}]) and rewrites matching container images in Pods, workload
// templates and CronJobs; comments and styles survive through kyaml, as in any SDK function.
package main

import (
	"os"
	"strings"

	"github.com/kptdev/krm-functions-sdk/go/fn"
)

type rule struct{ name, newName, newTag string }

var podSpecs = [][]string{
	{"spec"},
	{"spec", "template", "spec"},
	{"spec", "jobTemplate", "spec", "template", "spec"},
}

func split(image string) (string, string) {
	if at := strings.Index(image, "@"); at >= 0 {
		return image[:at], image[at:]
	}
	slash := strings.LastIndex(image, "/")
	if colon := strings.LastIndex(image, ":"); colon > slash {
		return image[:colon], image[colon:]
	}
	return image, ""
}

func setImages(rl *fn.ResourceList) (bool, error) {
	var rules []rule
	images, _, err := rl.FunctionConfig.NestedSlice("images")
	if err != nil {
		return false, err
	}
	for _, image := range images {
		name, _, _ := image.NestedString("name")
		newName, _, _ := image.NestedString("newName")
		newTag, _, _ := image.NestedString("newTag")
		rules = append(rules, rule{name, newName, newTag})
	}
	for _, obj := range rl.Items {
		for _, path := range podSpecs {
			for _, field := range []string{"containers", "initContainers"} {
				containers, found, err := obj.NestedSlice(append(path, field)...)
				if err != nil || !found {
					continue
				}
				for _, container := range containers {
					image, _, _ := container.NestedString("image")
					name, tag := split(image)
					for _, r := range rules {
						if r.name != name {
							continue
						}
						if r.newName != "" {
							name = r.newName
						}
						if r.newTag != "" {
							tag = ":" + r.newTag
						}
						if err := container.SetNestedString(name+tag, "image"); err != nil {
							return false, err
						}
						break
					}
				}
			}
		}
	}
	return true, nil
}

func main() {
	if err := fn.AsMain(fn.ResourceListProcessorFunc(setImages)); err != nil {
		os.Exit(1)
	}
}
