// Package process starts the local cluster's components as daemons that
// outlive the command that started them, finds them again from pid files, and
// stops them with their whole process group.
//
// Stage olm/cluster of chart -> scaffold -> bundle -> catalog ->
// olm/cluster -> doctor -> cmd: it may import earlier stages, the runtime
// and internal/, and must not import a later stage (doctor, cmd/).
package process
