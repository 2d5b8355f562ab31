! f08.f90 -- an MPI program in Fortran 2008 (`use mpi_f08`), built with Debian's mpif90.mpich:
! MPICH's mpi_f08 binding (in libmpichfort.so.12) on top of Reflex's libmpi.so.12. Checks
! collectives, TYPE(MPI_Status), derived types (struct and vector), nonblocking calls with
! statuses, a reduction operation, attribute callbacks, an error handler and a generalized
! request written in Fortran, MPI_ERRORS_RETURN with ierror, Comm_split and MPI-IO.
! Usage: f08 DIR (a scratch directory for the MPI-IO file).
! Prints "apps f08 rank R of N: ok" on every rank that passed; stops with "FAILED" otherwise.
module f08_callbacks
    use mpi_f08
    use, intrinsic :: iso_c_binding, only : c_ptr, c_f_pointer
    implicit none
    integer :: deletes = 0, handled = 0, handled_class = -1
    integer :: queries = 0, frees = 0, cancels = 0
    logical :: cancel_saw_complete = .true.
    integer(kind=MPI_ADDRESS_KIND) :: greq_state = 0, seen_state = 0
    type(MPI_Comm) :: handled_comm
contains
    ! inoutvec(i) = the element of larger magnitude, keeping its sign.
    subroutine absmax(invec, inoutvec, len, datatype)
        type(c_ptr), value :: invec, inoutvec
        integer :: len
        type(MPI_Datatype) :: datatype
        integer, pointer :: a(:), b(:)
        integer :: i
        call c_f_pointer(invec, a, [len])
        call c_f_pointer(inoutvec, b, [len])
        do i = 1, len
            if (abs(a(i)) > abs(b(i))) b(i) = a(i)
        end do
    end subroutine absmax

    subroutine copy_plus_one(oldcomm, comm_keyval, extra_state, attribute_val_in, &
                             attribute_val_out, flag, ierror)
        type(MPI_Comm) :: oldcomm
        integer :: comm_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
        logical :: flag
        attribute_val_out = attribute_val_in + 1 + extra_state
        flag = .true.
        ierror = MPI_SUCCESS
    end subroutine copy_plus_one

    subroutine count_delete(comm, comm_keyval, attribute_val, extra_state, ierror)
        type(MPI_Comm) :: comm
        integer :: comm_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
        deletes = deletes + 1
        ierror = MPI_SUCCESS
    end subroutine count_delete

    subroutine record_error(comm, error_code)
        type(MPI_Comm) :: comm
        integer :: error_code
        integer :: ierror
        handled = handled + 1
        handled_comm = comm
        call MPI_Error_class(error_code, handled_class, ierror)
    end subroutine record_error

    ! The generalized request "received" 3 integers from rank 5 with tag 77.
    subroutine greq_query(extra_state, status, ierror)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        type(MPI_Status) :: status
        integer :: ierror
        queries = queries + 1
        seen_state = extra_state
        call MPI_Status_set_elements(status, MPI_INTEGER, 3, ierror)
        call MPI_Status_set_cancelled(status, .false., ierror)
        status%MPI_SOURCE = 5
        status%MPI_TAG = 77
        ierror = MPI_SUCCESS
    end subroutine greq_query

    subroutine greq_free(extra_state, ierror)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        integer :: ierror
        frees = frees + 1
        ierror = MPI_SUCCESS
    end subroutine greq_free

    subroutine greq_cancel(extra_state, complete, ierror)
        integer(kind=MPI_ADDRESS_KIND) :: extra_state
        logical :: complete
        integer :: ierror
        cancels = cancels + 1
        cancel_saw_complete = complete
        ierror = MPI_SUCCESS
    end subroutine greq_cancel
end module f08_callbacks

program f08_on_reflex
    use mpi_f08
    use f08_callbacks
    implicit none
    type :: particle
        integer :: id
        double precision :: x(3)
    end type particle
    integer :: ierror, rank, size, left, right, i, count, cls, color, subsize, keyval
    integer :: sendval, recvval, ints(4), got_ints(4), values(3), best(3)
    double precision :: sums(4), matrix(3, 4), got(4)
    type(MPI_Status) :: status, statuses(2)
    type(MPI_Request) :: requests(2), greq
    type(MPI_Datatype) :: row, ptype, ptype_raw, blocktypes(2)
    type(MPI_Comm) :: sub, dup1, dup2
    type(MPI_Op) :: op
    type(MPI_Errhandler) :: handler
    type(MPI_File) :: fh
    type(particle) :: mine(2), theirs(2)
    integer :: blocklens(2)
    integer(kind=MPI_ADDRESS_KIND) :: displs(2), base, extent, value, extra
    integer(kind=MPI_OFFSET_KIND) :: offset
    logical :: found, flag
    character(len=256) :: dir

    call MPI_Init(ierror)
    call check(ierror == MPI_SUCCESS, 'MPI_Init returns MPI_SUCCESS in ierror')
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, size)
    right = mod(rank + 1, size)
    left = mod(rank + size - 1, size)

    ! Allreduce, with and without MPI_IN_PLACE.
    do i = 1, 4
        sums(i) = dble(rank * i)
    end do
    call MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    call check(sums(3) == dble(3 * size * (size - 1) / 2), 'allreduce with MPI_IN_PLACE')
    call MPI_Allreduce(rank, recvval, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
    call check(recvval == size - 1, 'allreduce MPI_MAX')

    ! Sendrecv into a TYPE(MPI_Status).
    sendval = 100 + rank
    call MPI_Sendrecv(sendval, 1, MPI_INTEGER, right, 7, recvval, 1, MPI_INTEGER, left, 7, &
                      MPI_COMM_WORLD, status)
    call MPI_Get_count(status, MPI_INTEGER, count)
    call check(recvval == 100 + left .and. status%MPI_SOURCE == left .and. &
               status%MPI_TAG == 7 .and. count == 1, &
               'sendrecv into TYPE(MPI_Status)')

    ! Nonblocking pair, Waitall with statuses, then with MPI_STATUSES_IGNORE.
    ints = [(rank * 10 + i, i = 1, 4)]
    call MPI_Irecv(got_ints, 4, MPI_INTEGER, left, 5, MPI_COMM_WORLD, requests(1))
    call MPI_Isend(ints, 4, MPI_INTEGER, right, 5, MPI_COMM_WORLD, requests(2))
    call MPI_Waitall(2, requests, statuses)
    call MPI_Get_count(statuses(1), MPI_INTEGER, count)
    call check(all(got_ints == [(left * 10 + i, i = 1, 4)]) .and. count == 4 .and. &
               statuses(1)%MPI_SOURCE == left .and. statuses(1)%MPI_TAG == 5 .and. &
               requests(1) == MPI_REQUEST_NULL, 'isend/irecv, waitall with statuses')
    call MPI_Irecv(recvval, 1, MPI_INTEGER, left, 6, MPI_COMM_WORLD, requests(1))
    call MPI_Isend(sendval, 1, MPI_INTEGER, right, 6, MPI_COMM_WORLD, requests(2))
    call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE)
    call check(recvval == 100 + left, 'waitall with MPI_STATUSES_IGNORE')

    ! Row 2 of a column-major matrix as a strided vector type.
    do i = 1, 4
        matrix(:, i) = dble(rank * 10 + i)
    end do
    matrix(2, :) = matrix(2, :) + 0.5d0
    call MPI_Type_vector(4, 1, 3, MPI_DOUBLE_PRECISION, row)
    call MPI_Type_commit(row)
    call MPI_Sendrecv(matrix(2, 1), 1, row, right, 10, got, 4, MPI_DOUBLE_PRECISION, left, 10, &
                      MPI_COMM_WORLD, status)
    call MPI_Get_count(status, MPI_DOUBLE_PRECISION, count)
    call check(count == 4 .and. all(got == [(dble(left * 10 + i) + 0.5d0, i = 1, 4)]), &
               'strided vector datatype')
    call MPI_Type_free(row)

    ! A Fortran derived type as an MPI struct type, resized to its extent; two of them.
    do i = 1, 2
        mine(i)%id = rank * 100 + i
        mine(i)%x = [dble(rank), dble(i), -1.5d0]
    end do
    call MPI_Get_address(mine(1), base)
    call MPI_Get_address(mine(1)%id, displs(1))
    call MPI_Get_address(mine(1)%x, displs(2))
    displs = displs - base
    blocklens = [1, 3]
    blocktypes = [MPI_INTEGER, MPI_DOUBLE_PRECISION]
    call MPI_Type_create_struct(2, blocklens, displs, blocktypes, ptype_raw)
    call MPI_Get_address(mine(2), extent)
    extent = extent - base
    call MPI_Type_create_resized(ptype_raw, 0_MPI_ADDRESS_KIND, extent, ptype)
    call MPI_Type_commit(ptype)
    call MPI_Sendrecv(mine, 2, ptype, right, 11, theirs, 2, ptype, left, 11, MPI_COMM_WORLD, &
                      status)
    call MPI_Get_count(status, ptype, count)
    call check(count == 2 .and. theirs(2)%id == left * 100 + 2 .and. &
               all(theirs(2)%x == [dble(left), 2d0, -1.5d0]) .and. theirs(1)%id == left * 100 + 1, &
               'struct datatype of a Fortran derived type')
    call MPI_Type_free(ptype)
    call MPI_Type_free(ptype_raw)

    ! A reduction operation written in Fortran (commutative).
    values = [rank + 1, -(rank + 1), merge(7, 0, rank == 0)]
    call MPI_Op_create(absmax, .true., op)
    call MPI_Allreduce(values, best, 3, MPI_INTEGER, op, MPI_COMM_WORLD)
    call check(all(best == [size, -size, 7]), 'user-defined operation in Fortran (allreduce)')
    call MPI_Reduce(values, best, 3, MPI_INTEGER, op, 0, MPI_COMM_WORLD)
    if (rank == 0) call check(all(best == [size, -size, 7]), 'user-defined operation (reduce)')
    call MPI_Op_free(op)
    call check(op == MPI_OP_NULL, 'MPI_Op_free sets MPI_OP_NULL')

    ! Split into even and odd ranks.
    color = mod(rank, 2)
    call MPI_Comm_split(MPI_COMM_WORLD, color, -rank, sub)
    call MPI_Comm_size(sub, subsize)
    call MPI_Allreduce(rank, recvval, 1, MPI_INTEGER, MPI_SUM, sub)
    call check(subsize == (size + 1 - color) / 2 .and. &
               recvval == sum([(color + 2 * i, i = 0, subsize - 1)]), 'comm_split')
    call MPI_Comm_rank(sub, i)
    call check(i == subsize - 1 - rank / 2, 'comm_split orders by key')
    call MPI_Comm_free(sub)
    call check(sub == MPI_COMM_NULL, 'MPI_Comm_free sets MPI_COMM_NULL')

    ! Attributes: MPI_TAG_UB as a value; a keyval with Fortran copy and delete callbacks.
    call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, value, found)
    call check(found .and. value >= 32767, 'MPI_TAG_UB attribute')
    extra = 100
    call MPI_Comm_create_keyval(copy_plus_one, count_delete, keyval, extra)
    call MPI_Comm_dup(MPI_COMM_WORLD, dup1)
    call MPI_Comm_set_attr(dup1, keyval, 42_MPI_ADDRESS_KIND)
    call MPI_Comm_dup(dup1, dup2)
    call MPI_Comm_get_attr(dup2, keyval, value, found)
    call check(found .and. value == 143, 'attribute copied by a Fortran callback')
    call MPI_Comm_free(dup2)
    call MPI_Comm_delete_attr(dup1, keyval)
    call check(deletes == 2, 'Fortran delete callback at free and at delete_attr')
    call MPI_Comm_get_attr(dup1, keyval, value, found)
    call check(.not. found, 'deleted attribute')
    call MPI_Comm_free_keyval(keyval)

    ! An error handler written in Fortran: called with the communicator and the code; the call
    ! then returns that code.
    call MPI_Comm_create_errhandler(record_error, handler)
    call MPI_Comm_set_errhandler(dup1, handler)
    call MPI_Send(sendval, 1, MPI_INTEGER, size + 5, 0, dup1, ierror)
    call MPI_Error_class(ierror, cls)
    call check(handled == 1 .and. handled_class == MPI_ERR_RANK .and. handled_comm == dup1 &
               .and. cls == MPI_ERR_RANK, 'error handler written in Fortran')
    call MPI_Errhandler_free(handler)
    call MPI_Comm_free(dup1)

    ! MPI_ERRORS_RETURN: the error comes back in ierror, with its class.
    call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
    call MPI_Send(sendval, 1, MPI_INTEGER, size + 5, 0, MPI_COMM_WORLD, ierror)
    call MPI_Error_class(ierror, cls)
    call check(ierror /= MPI_SUCCESS .and. cls == MPI_ERR_RANK, 'MPI_ERR_RANK in ierror')
    call MPI_Send(sendval, -1, MPI_INTEGER, right, 0, MPI_COMM_WORLD, ierror)
    call MPI_Error_class(ierror, cls)
    call check(cls == MPI_ERR_COUNT, 'MPI_ERR_COUNT in ierror')
    row = MPI_DATATYPE_NULL
    call MPI_Type_commit(row, ierror)
    call MPI_Error_class(ierror, cls)
    call check(cls == MPI_ERR_TYPE, 'MPI_ERR_TYPE in ierror')

    ! A generalized request with Fortran callbacks: query at wait, then free.
    greq_state = 1234
    call MPI_Grequest_start(greq_query, greq_free, greq_cancel, greq_state, greq, ierror)
    call check(ierror == MPI_SUCCESS, 'MPI_Grequest_start')
    call MPI_Test(greq, flag, status)
    call check(.not. flag .and. queries == 0, 'generalized request pending before complete')
    call MPI_Grequest_complete(greq)
    call MPI_Wait(greq, status)
    call MPI_Get_count(status, MPI_INTEGER, count)
    call MPI_Test_cancelled(status, flag)
    call check(queries == 1 .and. frees == 1 .and. seen_state == 1234 .and. count == 3 .and. &
               status%MPI_SOURCE == 5 .and. status%MPI_TAG == 77 .and. .not. flag .and. &
               greq == MPI_REQUEST_NULL, 'generalized request: query and free in Fortran')
    ! Cancelled before it completes: cancel_fn sees complete = .false.
    call MPI_Grequest_start(greq_query, greq_free, greq_cancel, greq_state, greq)
    call MPI_Cancel(greq)
    call check(cancels == 1 .and. .not. cancel_saw_complete, 'generalized request: cancel_fn')
    call MPI_Grequest_complete(greq)
    call MPI_Wait(greq, MPI_STATUS_IGNORE)
    call check(queries == 2 .and. frees == 2, 'generalized request: second query and free')

    ! MPI-IO: each rank writes 4 integers at its own offset (collectively), then reads its
    ! right neighbour's.
    call get_command_argument(1, dir)
    call check(len_trim(dir) > 0, 'usage: f08 DIR')
    call MPI_File_open(MPI_COMM_WORLD, trim(dir)//'/f08.dat', &
                       ior(MPI_MODE_CREATE, MPI_MODE_RDWR), MPI_INFO_NULL, fh, ierror)
    call check(ierror == MPI_SUCCESS, 'MPI_File_open')
    offset = int(rank, MPI_OFFSET_KIND) * 16
    call MPI_File_write_at_all(fh, offset, ints, 4, MPI_INTEGER, status)
    call MPI_Get_count(status, MPI_INTEGER, count)
    call check(count == 4, 'MPI_File_write_at_all count')
    call MPI_File_sync(fh)
    call MPI_Barrier(MPI_COMM_WORLD)
    call MPI_File_sync(fh)
    offset = int(right, MPI_OFFSET_KIND) * 16
    call MPI_File_read_at(fh, offset, got_ints, 4, MPI_INTEGER, status)
    call check(all(got_ints == [(right * 10 + i, i = 1, 4)]), 'MPI-IO: neighbour''s data read back')
    call MPI_File_close(fh)
    call check(fh == MPI_FILE_NULL, 'MPI_File_close sets MPI_FILE_NULL')
    call MPI_Barrier(MPI_COMM_WORLD)
    if (rank == 0) call MPI_File_delete(trim(dir)//'/f08.dat', MPI_INFO_NULL)

    call MPI_Barrier(MPI_COMM_WORLD)
    write (*, '(a, i0, a, i0, a)') 'apps f08 rank ', rank, ' of ', size, ': ok'
    call MPI_Finalize()

contains

    subroutine check(ok, what)
        logical, intent(in) :: ok
        character(len=*), intent(in) :: what
        if (.not. ok) then
            write (*, '(a, i0, a, a)') 'apps f08 rank ', rank, ': FAILED ', what
            call MPI_Abort(MPI_COMM_WORLD, 1)
        end if
    end subroutine check
end program f08_on_reflex
