module pkg.package-operator.run/boxcutter

go 1.26.3
