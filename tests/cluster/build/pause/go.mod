// The real node's sandbox ("pause") program; standard library only. tests/cluster/build.sh builds it.
module krmfn.dev/testcluster/pause

go 1.25.0
