module github.com/facho-olt/facho/services/projector

go 1.26
