module github.com/facho-olt/facho/services/oltsim

go 1.26
