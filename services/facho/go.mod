module github.com/facho-olt/facho/services/facho

go 1.26
