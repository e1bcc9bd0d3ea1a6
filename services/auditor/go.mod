module github.com/facho-olt/facho/services/auditor

go 1.26
