module github.com/facho-olt/facho/services/api

go 1.26
